#include "http/close.h"

#include <array>
#include <memory>

#include <boost/asio/redirect_error.hpp>

namespace seedance::http {

boost::asio::awaitable<void> CloseAfterAnswer(boost::beast::tcp_stream& stream, bool unread_input) {
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

}  // namespace seedance::http
