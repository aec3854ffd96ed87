// CloseAfterAnswer: how an HTTP server closes a connection after its answer.
//
// When the answer went out before the request was read whole (413 for a header or body over
// the limit), closing at once with the client's bytes still unread makes the kernel reset the
// connection, and the reset can destroy the answer before the client reads it (the client sees
// "broken pipe" or "connection reset" instead of 413). Like nginx's lingering close, the
// server then half-closes (no more sending), reads and discards what the client still sends,
// and closes on end of stream, after kLingerTime, or after kLingerBytes: bounded, so a client
// cannot hold the connection longer than that.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <memory>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/tcp_stream.hpp>

namespace seedance::util {

inline constexpr std::chrono::seconds kLingerTime{2};
inline constexpr size_t kLingerBytes = 1 << 20;

inline boost::asio::awaitable<void> CloseAfterAnswer(boost::beast::tcp_stream& stream,
                                                     bool unread_input) {
  namespace asio = boost::asio;
  boost::system::error_code ec;
  if (unread_input) {
    stream.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ec);
    stream.expires_after(kLingerTime);
    // What is read is thrown away: one buffer per thread serves every connection (not one in
    // each coroutine frame), and large reads keep the operations few. Allocated on first use:
    // a thread_local array would be part of every thread's TLS block, zeroed (so resident) in
    // each thread at its start, 64 KiB of idle RSS per thread for a path most never take.
    static thread_local std::unique_ptr<std::array<char, 64 * 1024>> discard;
    if (discard == nullptr) discard = std::make_unique<std::array<char, 64 * 1024>>();
    size_t total = 0;
    while (!ec && total < kLingerBytes) {
      total += co_await stream.async_read_some(asio::buffer(*discard),
                                               asio::redirect_error(asio::use_awaitable, ec));
    }
  }
  stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  stream.socket().close(ec);
}

}  // namespace seedance::util
