#include "http/client.h"

#include <gtest/gtest.h>

#include <boost/asio/steady_timer.hpp>
#include <boost/beast/http.hpp>

#include <optional>
#include <string>

#include "http/fetch.h"
#include "testing/test_http_server.h"

namespace seedance::http {
namespace {

namespace bhttp = boost::beast::http;
using testing::TestHttpReply;
using testing::TestHttpServer;

// Records what came of one exchange.
class Recorded final : public Exchange {
 public:
  std::optional<unsigned> status;
  std::string body;
  bool body_cut = false;
  std::optional<std::string> failure;
  bool stopped = false;

 private:
  void Answered(const Answer& answer) override {
    status = answer.status;
    body = std::string(answer.body);
    body_cut = answer.body_cut;
  }
  void Failed(std::string reason, bool was_stopped) override {
    failure = std::move(reason);
    stopped = was_stopped;
  }
};

class ClientTest : public ::testing::Test {
 protected:
  std::shared_ptr<Client> Make(const std::string& url, uint64_t max_body = 1 << 20) {
    auto u = ParseUrl(url);
    EXPECT_TRUE(u.has_value());
    auto client = Client::Make(io_, {.url = *u, .max_response_body = max_body, .component = "t"});
    EXPECT_TRUE(client.has_value());
    return *client;
  }
  // Sends `e`'s request and runs the loop until it ends (at most 10 s).
  void Run(Client& client, Recorded& e, uint64_t id = 1) {
    client.Send(e, id);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!e.status && !e.failure && std::chrono::steady_clock::now() < deadline) {
      io_.restart();
      io_.run_for(std::chrono::milliseconds(50));
    }
  }
  boost::asio::io_context io_;
};

TEST_F(ClientTest, SendsTheRequestAndReadsTheAnswerOverOneKeptAliveConnection) {
  TestHttpServer server([](const std::string& body, int n) {
    return TestHttpReply{.body = "got " + body + " #" + std::to_string(n)};
  });
  auto client = Make(server.url());
  for (int i = 1; i <= 3; ++i) {
    Recorded e;
    client->NewRequest(e, bhttp::verb::post, "batch" + std::to_string(i));
    Run(*client, e);
    ASSERT_EQ(e.status, 200u) << e.failure.value_or("");
    EXPECT_EQ(e.body, "got batch" + std::to_string(i) + " #" + std::to_string(i));
    EXPECT_FALSE(e.body_cut);
  }
  EXPECT_EQ(server.accepted(), (std::vector<std::string>{"batch1", "batch2", "batch3"}));
}

TEST_F(ClientTest, AnAnswerOverTheBodyLimitIsDecidedByItsStatus) {
  TestHttpServer server([](const std::string&, int) {
    return TestHttpReply{.status = 503, .body = std::string(100, 'x'), .claimed_length = 1u << 30};
  });
  auto client = Make(server.url(), /*max_body=*/4096);
  Recorded e;
  client->NewRequest(e, bhttp::verb::post, "b");
  Run(*client, e);
  ASSERT_EQ(e.status, 503u) << e.failure.value_or("");
  EXPECT_TRUE(e.body_cut);
}

TEST_F(ClientTest, AbortEndsAnExchangeTheServerNeverAnswers) {
  TestHttpServer server([](const std::string&, int) { return TestHttpReply{.hang = true}; });
  auto client = Make(server.url());
  Recorded e;
  client->NewRequest(e, bhttp::verb::post, "b");
  boost::asio::steady_timer timer(io_, std::chrono::milliseconds(100));
  timer.async_wait([&](boost::system::error_code) { client->Abort(7); });
  Run(*client, e, 7);
  ASSERT_TRUE(e.failure.has_value());
  EXPECT_FALSE(e.stopped);
  EXPECT_FALSE(e.status.has_value());
}

TEST_F(ClientTest, SaysWhyItCannotConnectAndFailsAtOnceWhenStopped) {
  TestHttpServer server([](const std::string&, int) { return TestHttpReply{}; });
  std::string url = server.url();
  server.Stop();
  auto client = Make(url);
  Recorded e;
  client->NewRequest(e, bhttp::verb::post, "b");
  Run(*client, e);
  ASSERT_TRUE(e.failure.has_value());
  EXPECT_NE(e.failure->find("cannot connect to 127.0.0.1"), std::string::npos) << *e.failure;

  client->Stop();
  Recorded after;
  client->NewRequest(after, bhttp::verb::post, "b");
  client->Send(after, 2);
  ASSERT_TRUE(after.failure.has_value());
  EXPECT_TRUE(after.stopped);
}

TEST(FetchTest, GetsAnAnswerAndSaysWhyNot) {
  TestHttpServer server([](const std::string&, int) { return TestHttpReply{.body = "ok"}; });
  auto reply = Fetch("GET", server.url());
  ASSERT_TRUE(reply.has_value()) << reply.error().message();
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(reply->body, "ok");
  EXPECT_FALSE(Fetch("DELETE", server.url()).has_value());
  EXPECT_FALSE(Fetch("GET", "ftp://x/").has_value());

  TestHttpServer silent([](const std::string&, int) { return TestHttpReply{.hang = true}; });
  const auto started = std::chrono::steady_clock::now();
  auto timed_out = Fetch("GET", silent.url(), "", "text/plain", std::chrono::milliseconds(200));
  ASSERT_FALSE(timed_out.has_value());
  EXPECT_EQ(timed_out.error().code(), StatusCode::kUnavailable);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
}

}  // namespace
}  // namespace seedance::http

namespace seedance::http {
namespace {

// An owner of a client and of an exchange, as a sink is; the exchange names it (Owner()).
struct ExchangeOwner : std::enable_shared_from_this<ExchangeOwner> {
  class Owned final : public Exchange {
   public:
    ExchangeOwner* owner = nullptr;
    bool ended = false;

   private:
    void Answered(const Answer&) override { ended = true; }
    void Failed(std::string, bool) override { ended = true; }
    std::shared_ptr<void> Owner() override { return owner->shared_from_this(); }
  };
  std::shared_ptr<Client> client;
  Owned exchange;
};

// Regression: the HTTP sinks' deliveries held their sender, which held them, so a loop
// destroyed with an exchange pending leaked both (LeakSanitizer, once, in the conformance
// suite). The pending steps hold the owner instead, and let go when they are destroyed.
TEST(ClientOwnerTest, PendingStepsHoldTheOwnerAndLetGoWhenTheLoopIsDestroyedUnrun) {
  std::weak_ptr<ExchangeOwner> watch;
  bool ended = false;
  {
    boost::asio::io_context io;
    // A peer that accepts (the kernel's backlog) and never answers.
    boost::asio::ip::tcp::acceptor silent(
        io, boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
    auto url = ParseUrl("http://127.0.0.1:" + std::to_string(silent.local_endpoint().port()));
    ASSERT_TRUE(url.has_value());
    {
      auto owner = std::make_shared<ExchangeOwner>();
      owner->client = Client::Make(io, {.url = *url, .component = "t"}).value();
      owner->exchange.owner = owner.get();
      owner->client->NewRequest(owner->exchange, bhttp::verb::post, "x");
      owner->client->Send(owner->exchange, 1);
      watch = owner;
    }                                            // its user lets go in the middle of the exchange
    io.run_for(std::chrono::milliseconds(300));  // connected, written, the answer awaited
    ASSERT_FALSE(watch.expired()) << "the pending read must keep the owner";
    ended = watch.lock()->exchange.ended;
  }  // the loop goes with the read pending: its handler is destroyed, never run
  EXPECT_FALSE(ended);
  EXPECT_TRUE(watch.expired());
}

}  // namespace
}  // namespace seedance::http
