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

#include <chrono>
#include <cstddef>
#include <utility>  // Boost 1.74's awaitable.hpp uses std::exchange without including it.

#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/tcp_stream.hpp>

namespace seedance::http {

inline constexpr std::chrono::seconds kLingerTime{2};
inline constexpr size_t kLingerBytes = 1 << 20;

// One definition in close.cc (an inline coroutine's frame type is defined in every
// translation unit that uses it, which link-time optimization reports as an ODR violation).
boost::asio::awaitable<void> CloseAfterAnswer(boost::beast::tcp_stream& stream, bool unread_input);

}  // namespace seedance::http
