// Transport: the broker connection's byte stream, TCP or TLS over it, behind one type: the
// client reads, writes and closes without asking which (the TLS-or-plain choice is made once,
// here). Also the socket options the client's read pacing uses. Not thread-safe (the client's
// io thread).
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp needs std::exchange declared first.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <cstddef>
#include <memory>
#include <string>

namespace seedance::mqtt {

class Transport {
 public:
  using Socket = boost::asio::ip::tcp::socket;
  using TlsStream = boost::asio::ssl::stream<Socket&>;

  explicit Transport(boost::asio::io_context& io) : socket_(io) {}
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  // Connecting, and options: the TCP socket (under TLS too).
  Socket& socket() { return socket_; }
  bool IsOpen() const { return socket_.is_open(); }
  bool tls() const { return tls_ != nullptr; }

  // From now on TLS over the socket: SNI `name`, the certificate checked against it when
  // `verify`. Returns the stream for its handshake.
  TlsStream& UseTls(boost::asio::ssl::context& ctx, const std::string& name, bool verify);

  template <typename Buffers, typename Token>
  auto AsyncReadSome(const Buffers& buffers, Token&& token) {
    if (tls_) return tls_->async_read_some(buffers, std::forward<Token>(token));
    return socket_.async_read_some(buffers, std::forward<Token>(token));
  }
  // All of `buffers` (one write in progress at a time).
  template <typename Buffers, typename Handler>
  void AsyncWrite(const Buffers& buffers, Handler&& handler) {
    if (tls_) {
      boost::asio::async_write(*tls_, buffers, std::forward<Handler>(handler));
    } else {
      boost::asio::async_write(socket_, buffers, std::forward<Handler>(handler));
    }
  }
  // A write that does not wait for the loop (the DISCONNECT at Close): what the socket takes.
  void WriteNow(const std::string& bytes, boost::system::error_code& ec);

  // Shuts the socket down both ways and closes it (reads and writes in progress end).
  void Close();
  // TCP_QUICKACK: the kernel acknowledges what arrives at once instead of delaying the ACK.
  void RequestQuickAck();
  // SO_RCVLOWAT: the kernel signals the socket readable from this many bytes on.
  void SetReceiveLowWatermark(size_t bytes);

 private:
  Socket socket_;
  std::unique_ptr<TlsStream> tls_;
};

}  // namespace seedance::mqtt
