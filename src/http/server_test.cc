#include "http/server.h"

#include <gtest/gtest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http.hpp>

#include <atomic>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "util/event_loop.h"

namespace seedance::http {
namespace {

namespace asio = boost::asio;
namespace bhttp = boost::beast::http;
using asio::ip::tcp;

// A server on its own loop thread whose handler answers with the request's target.
class ServerTest : public ::testing::Test {
 protected:
  void Start(ServerLimits limits) {
    server_ = std::make_unique<Server>(
        loop_.io(), "test", limits,
        ServerHooks{.handle = [this](const Request& req) -> asio::awaitable<Response> {
                      handled_.fetch_add(1);
                      Response res{bhttp::status::ok, req.version()};
                      res.body() = "you asked for " + std::string(req.target()) + "\n";
                      co_return res;
                    },
                    .too_large =
                        [this](TooLarge what) {
                          too_large_.store(what == TooLarge::kBody ? 1 : 2);
                          Response res{bhttp::status::payload_too_large, 11};
                          res.body() = "too large\n";
                          return res;
                        }});
    auto port = server_->Listen("127.0.0.1:0");
    ASSERT_TRUE(port.has_value()) << port.error().message();
    port_ = *port;
    loop_.Start();
  }
  void TearDown() override {
    loop_.Call([&] { server_->Stop(); });
    loop_.Join();
  }

  // Sends `bytes` on a new connection, then reads until the server closes it (or 5 s).
  std::string Exchange(const std::string& bytes, bool half_close = true) {
    asio::io_context io;
    tcp::socket s(io);
    s.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port_));
    timeval tv{5, 0};
    ::setsockopt(s.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    asio::write(s, asio::buffer(bytes));
    if (half_close) s.shutdown(tcp::socket::shutdown_send);
    std::string out;
    boost::system::error_code ec;
    char chunk[4096];
    while (!ec) {
      const size_t n = s.read_some(asio::buffer(chunk), ec);
      out.append(chunk, n);
    }
    return out;
  }

  EventLoop loop_;
  std::unique_ptr<Server> server_;
  uint16_t port_ = 0;
  std::atomic<int> handled_{0};
  std::atomic<int> too_large_{0};
};

TEST_F(ServerTest, AnswersPipelinedRequestsInOrderOnOneConnection) {
  Start({});
  const std::string out = Exchange(
      "GET /one HTTP/1.1\r\nHost: x\r\n\r\nGET /two HTTP/1.1\r\nHost: x\r\n\r\n"
      "GET /three HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  const size_t one = out.find("you asked for /one");
  const size_t two = out.find("you asked for /two");
  const size_t three = out.find("you asked for /three");
  ASSERT_NE(one, std::string::npos) << out;
  ASSERT_NE(two, std::string::npos) << out;
  ASSERT_NE(three, std::string::npos) << out;
  EXPECT_LT(one, two);
  EXPECT_LT(two, three);
  EXPECT_NE(out.find("Server: seedance"), std::string::npos);
  EXPECT_EQ(handled_.load(), 3);
}

TEST_F(ServerTest, RefusesAnAnnouncedBodyOverTheLimitBeforeReadingIt) {
  Start({.max_body_bytes = 1024});
  // Announced, never sent: the answer comes on the header alone, nothing reserved for it.
  const std::string out =
      Exchange("POST /in HTTP/1.1\r\nHost: x\r\nContent-Length: 66666666666666666\r\n\r\n",
               /*half_close=*/false);
  EXPECT_EQ(out.rfind("HTTP/1.1 413", 0), 0u) << out;
  EXPECT_NE(out.find("Connection: close"), std::string::npos) << out;
  EXPECT_EQ(too_large_.load(), 1);
  EXPECT_EQ(handled_.load(), 0);
}

TEST_F(ServerTest, RefusesAHeaderOverTheLimit) {
  Start({.max_header_bytes = 512});
  const std::string out =
      Exchange("GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(2048, 'a') + "\r\n\r\n");
  EXPECT_EQ(out.rfind("HTTP/1.1 413", 0), 0u) << out;
  EXPECT_EQ(too_large_.load(), 2);
  EXPECT_EQ(handled_.load(), 0);
}

TEST_F(ServerTest, HeadGetsTheHeaderWithoutTheBody) {
  Start({});
  const std::string out = Exchange("HEAD /x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(out.rfind("HTTP/1.1 200", 0), 0u) << out;
  EXPECT_NE(out.find("Content-Length: 17"), std::string::npos) << out;  // "you asked for /x\n"
  EXPECT_EQ(out.find("you asked for"), std::string::npos) << out;
}

TEST_F(ServerTest, ClosesAConnectionSilentPastTheIdleTimeout) {
  Start({.idle_timeout = std::chrono::milliseconds(200)});
  const auto started = std::chrono::steady_clock::now();
  const std::string out = Exchange("GET /partial HTTP/1.1\r\nHost:", /*half_close=*/false);
  EXPECT_EQ(out, "");
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(4));
  EXPECT_EQ(handled_.load(), 0);
}

TEST(ServerListenTest, SaysWhyItCannotListen) {
  asio::io_context io;
  Server server(io, "test", {}, {});
  auto bad = server.Listen("not an address");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code(), StatusCode::kInvalidArgument);
  Server first(io, "test", {}, {});
  auto port = first.Listen("127.0.0.1:0");
  ASSERT_TRUE(port.has_value());
  auto taken = server.Listen("127.0.0.1:" + std::to_string(*port));
  ASSERT_FALSE(taken.has_value());
  EXPECT_NE(taken.error().message().find("cannot listen on"), std::string::npos);
}

// The streaming tests: a server on its own loop.
void StopOnItsLoop(EventLoop& loop, Server& server) {
  loop.Call([&] { server.Stop(); });
  loop.Join();
}

tcp::socket Connect(asio::io_context& io, uint16_t port) {
  tcp::socket s(io);
  s.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  return s;
}

// Pieces given one by one; "" at the end.
class Pieces final : public ResponseStream {
 public:
  explicit Pieces(std::vector<std::string> pieces) : pieces_(std::move(pieces)) {}
  asio::awaitable<std::string> Next() override {
    if (next_ == pieces_.size()) co_return std::string();
    co_return pieces_[next_++];
  }

 private:
  std::vector<std::string> pieces_;
  size_t next_ = 0;
};

TEST(StreamingServerTest, AStreamIsWrittenChunkedAndAPlainAnswerAsBefore) {
  EventLoop loop;
  Server server(
      loop.io(), "test", ServerLimits{},
      ServerHooks{.handle = {},
                  .handle_streaming = [](const Request& req) -> asio::awaitable<StreamingAnswer> {
                    Response res{bhttp::status::ok, req.version()};
                    if (req.target() != "/stream") {
                      res.body() = "plain\n";
                      co_return StreamingAnswer{std::move(res), nullptr};
                    }
                    res.set(bhttp::field::content_type, "application/x-ndjson");
                    co_return StreamingAnswer{
                        std::move(res),
                        std::make_unique<Pieces>(std::vector<std::string>{"a\n", "bb\n"})};
                  }});
  auto port = server.Listen("127.0.0.1:0");
  ASSERT_TRUE(port.has_value());
  loop.Start();
  auto exchange = [&](const std::string& bytes) {
    asio::io_context io;
    tcp::socket s = Connect(io, *port);
    timeval tv{5, 0};
    ::setsockopt(s.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    asio::write(s, asio::buffer(bytes));
    std::string out;
    boost::system::error_code ec;
    char chunk[4096];
    while (!ec) {
      const size_t n = s.read_some(asio::buffer(chunk), ec);
      out.append(chunk, n);
    }
    return out;
  };
  // The stream: chunked, its pieces in order, the last chunk, then the connection closes
  // (the read ends) although the request was keep-alive.
  const std::string streamed = exchange("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_NE(streamed.find("Transfer-Encoding: chunked\r\n"), std::string::npos) << streamed;
  EXPECT_NE(streamed.find("Content-Type: application/x-ndjson\r\n"), std::string::npos);
  EXPECT_NE(streamed.find("\r\n\r\n2\r\na\n\r\n3\r\nbb\n\r\n0\r\n\r\n"), std::string::npos)
      << streamed;
  const std::string plain = exchange("GET /x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_NE(plain.find("Content-Length: 6\r\n\r\nplain\n"), std::string::npos) << plain;
  StopOnItsLoop(loop, server);
}

// Never gives a piece; Cancel() ends it.
class Silent final : public ResponseStream {
 public:
  Silent(asio::io_context& io, std::atomic<bool>& ended) : timer_(io), ended_(ended) {}
  ~Silent() override { ended_ = true; }
  asio::awaitable<std::string> Next() override {
    timer_.expires_after(std::chrono::hours(1));
    boost::system::error_code ec;
    co_await timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    co_return std::string();
  }
  void Cancel() override { timer_.cancel(); }

 private:
  asio::steady_timer timer_;
  std::atomic<bool>& ended_;
};

TEST(StreamingServerTest, AClientThatGoesEndsItsStreamWithoutWaitingForAWrite) {
  EventLoop loop;
  std::atomic<bool> ended{false};
  Server server(
      loop.io(), "test", ServerLimits{},
      ServerHooks{.handle = {},
                  .handle_streaming = [&](const Request& req) -> asio::awaitable<StreamingAnswer> {
                    co_return StreamingAnswer{Response{bhttp::status::ok, req.version()},
                                              std::make_unique<Silent>(loop.io(), ended)};
                  }});
  auto port = server.Listen("127.0.0.1:0");
  ASSERT_TRUE(port.has_value());
  loop.Start();
  {
    asio::io_context io;
    tcp::socket s = Connect(io, *port);
    asio::write(s, asio::buffer(std::string("GET /s HTTP/1.1\r\nHost: x\r\n\r\n")));
    char header[256];
    s.read_some(asio::buffer(header));  // the answer's header: the stream is open
  }                                     // closed
  for (int i = 0; i < 200 && !ended; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(ended) << "the stream outlived its client by 2 s";
  StopOnItsLoop(loop, server);
}

// Gives 64 KiB pieces without end.
class Endless final : public ResponseStream {
 public:
  explicit Endless(std::atomic<bool>& ended) : ended_(ended) {}
  ~Endless() override { ended_ = true; }
  asio::awaitable<std::string> Next() override { co_return std::string(64 * 1024, 'x'); }

 private:
  std::atomic<bool>& ended_;
};

TEST(StreamingServerTest, AClientThatReadsNothingIsDisconnectedAfterTheStallTimeout) {
  EventLoop loop;
  std::atomic<bool> ended{false};
  Server server(
      loop.io(), "test", ServerLimits{.stream_stall_timeout = std::chrono::milliseconds(300)},
      ServerHooks{.handle = {},
                  .handle_streaming = [&](const Request& req) -> asio::awaitable<StreamingAnswer> {
                    co_return StreamingAnswer{Response{bhttp::status::ok, req.version()},
                                              std::make_unique<Endless>(ended)};
                  }});
  auto port = server.Listen("127.0.0.1:0");
  ASSERT_TRUE(port.has_value());
  loop.Start();
  asio::io_context io;
  tcp::socket s = Connect(io, *port);
  asio::write(s, asio::buffer(std::string("GET /s HTTP/1.1\r\nHost: x\r\n\r\n")));
  // Reads nothing: the buffers fill, a write stalls, the server gives up on the client.
  for (int i = 0; i < 500 && !ended; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(ended) << "a client reading nothing held its stream for 5 s";
  s.close();
  StopOnItsLoop(loop, server);
}

}  // namespace
}  // namespace seedance::http
