#include "mqtt/transport.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <boost/asio/ssl/host_name_verification.hpp>

namespace seedance::mqtt {

namespace asio = boost::asio;

Transport::TlsStream& Transport::UseTls(asio::ssl::context& ctx, const std::string& name,
                                        bool verify) {
  tls_ = std::make_unique<TlsStream>(socket_, ctx);
  SSL_set_tlsext_host_name(tls_->native_handle(), name.c_str());
  if (verify) {
    tls_->set_verify_mode(asio::ssl::verify_peer);
    tls_->set_verify_callback(asio::ssl::host_name_verification(name));
  } else {
    tls_->set_verify_mode(asio::ssl::verify_none);
  }
  return *tls_;
}

void Transport::WriteNow(const std::string& bytes, boost::system::error_code& ec) {
  if (tls_) {
    asio::write(*tls_, asio::buffer(bytes), ec);
  } else {
    asio::write(socket_, asio::buffer(bytes), ec);
  }
}

void Transport::Close() {
  boost::system::error_code ec;
  socket_.shutdown(Socket::shutdown_both, ec);
  socket_.close(ec);
}

void Transport::RequestQuickAck() {
  int one = 1;  // a failure only costs latency
  ::setsockopt(socket_.native_handle(), IPPROTO_TCP, TCP_QUICKACK, &one, sizeof one);
}

void Transport::SetReceiveLowWatermark(size_t bytes) {
  boost::system::error_code ec;  // a failure only costs wake-ups
  socket_.set_option(asio::socket_base::receive_low_watermark(static_cast<int>(bytes)), ec);
}

}  // namespace seedance::mqtt
