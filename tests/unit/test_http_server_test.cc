// The test HTTP server's idle wait (tests/testing/test_http_server.h), which the sink
// conformance suite relies on between a stopped sink and Recover(): it must not report idle
// while a request is still to be read, even from a connection not yet accepted.
#include "testing/test_http_server.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "testing/loopback_port.h"

namespace seedance::testing {
namespace {

int PortOf(const std::string& url) {  // "http://127.0.0.1:PORT/ingest"
  const size_t colon = url.rfind(':');
  return std::stoi(url.substr(colon + 1, url.find('/', colon) - colon - 1));
}

// Connects, sends one whole request and closes without reading the answer.
void SendAndClose(int port, const std::string& body) {
  const int fd = ConnectLoopback(port);
  ASSERT_GE(fd, 0);
  const std::string req =
      "POST /ingest HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\n\r\n" + body;
  ASSERT_EQ(::send(fd, req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
  ::close(fd);
}

TEST(TestHttpServerTest, IdleOnlyOnceEveryRequestOfClosedConnectionsHasBeenRead) {
  TestHttpServer server([](const std::string&, int) { return TestHttpReply{.status = 503}; });
  const int port = PortOf(server.url());
  constexpr int kConnections = 64;
  for (int round = 0; round < 5; ++round) {
    for (int i = 0; i < kConnections; ++i) SendAndClose(port, "n=" + std::to_string(i));
    ASSERT_TRUE(server.WaitUntilIdle(std::chrono::seconds(10)));
    // Nothing was left to read: each connection's request was read before it counted as idle.
    EXPECT_EQ(server.requests(), (round + 1) * kConnections) << "round " << round;
  }
}

TEST(TestHttpServerTest, NotIdleWhileAClientHoldsAConnection) {
  TestHttpServer server([](const std::string&, int) { return TestHttpReply{}; });
  const int fd = ConnectLoopback(PortOf(server.url()));
  ASSERT_GE(fd, 0);
  EXPECT_FALSE(server.WaitUntilIdle(std::chrono::milliseconds(100)));
  ::close(fd);
  EXPECT_TRUE(server.WaitUntilIdle(std::chrono::seconds(10)));
}

}  // namespace
}  // namespace seedance::testing
