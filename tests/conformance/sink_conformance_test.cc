// The sink conformance suite: every sink, driven by the real SinkRunner from a real durable
// queue, must pass these. Each sink has a fixture that makes it fail the way it really fails
// (the HTTP sink against a real server on 127.0.0.1 that answers 503, 400, 413 or nothing; the
// file sink writing to /dev/full; stdout redirected to /dev/full; the MQTT sink against a real
// mosquitto that refuses its login or, by ACL, its topic). Two hostile peers every networked
// sink meets: one that accepts and then never answers (each attempt ends at the runner's
// timeout and is retried, and delivery resumes once it answers again), and one that answers
// with a body over any read limit or shorter than it claims (its status decides, at once:
// never retried for ever). A case a sink cannot meet
// by its nature (a file never refuses an event) is skipped with that reason.
//
// A new sink adds a fixture here and passes the suite.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>

#ifdef SEEDANCE_TEST_NATS
#include <nats/nats.h>

#include "testing/test_nats_server.h"
#endif
#ifdef SEEDANCE_TEST_KAFKA
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#endif

#include "core/delivery/sink_runner.h"
#include "mqtt/client.h"
#include "testing/plugin_harness.h"
#include "testing/test_http_server.h"
#include "testing/test_mqtt_broker.h"

namespace seedance {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

// The numbers n of the payloads {"n":n} in `text`, in order.
std::vector<int> Numbers(const std::string& text) {
  static const std::regex kN("\"n\":(\\d+)");
  std::vector<int> out;
  for (std::sregex_iterator it(text.begin(), text.end(), kN), end; it != end; ++it) {
    out.push_back(std::stoi((*it)[1]));
  }
  return out;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A sink under test and the means to make it fail. Set up failures before Start().
class SinkFixture {
 public:
  virtual ~SinkFixture() = default;
  virtual std::string type() const = 0;
  // The sink's section (type aside): payload encoding, small batches, quick retries.
  virtual std::string params() const = 0;
  // What reached the far side: the n of each event, in arrival order (repeats included).
  virtual std::vector<int> Delivered() = 0;
  // Attempts fail transiently (a 503, a full disk) until Recover().
  virtual void FailTransiently() = 0;
  virtual void Recover() = 0;
  // Refuses for good every event with n ≥ 1000; nullopt, or why this sink never refuses.
  virtual std::optional<std::string> RefuseMarked() { return "it never refuses an event"; }
  // Answers "too large" for attempts of more than `max_events` events or holding n = 7.
  virtual std::optional<std::string> TooLargeAbove(size_t /*max_events*/) {
    return "nothing it writes is ever too large";
  }
  // The sink's Start() returned (it connected, checked what it checks): a failure that would
  // stop the start itself begins here.
  virtual void Started() {}
  // Why the sink's far side cannot be set up here (then every case skips with it).
  virtual std::optional<std::string> Unavailable() const { return std::nullopt; }
  // After the sink stopped: returns once the far side has decided everything it was sent, so
  // that a request still being read does not meet a Recover() that came after the stop (and
  // is taken, unheard by the stopped sink: its events then come twice). Where the far side
  // decides as it receives, there is nothing to wait for.
  virtual void WaitUntilAnswered() {}
  // The first attempt never completes by itself (only the runner's timeout ends it).
  virtual std::optional<std::string> HangFirstAttempt() {
    return "it writes synchronously: an attempt cannot outlast a timeout";
  }
  // From now on the far side accepts and then answers nothing, until Recover().
  virtual std::optional<std::string> GoSilent() {
    return "it writes synchronously: nothing answers it, so nothing can leave it waiting";
  }
  // The far side refuses events with n ≥ 1000 with a 2 MiB answer, and takes the others with
  // an answer that claims 50 MB and is cut short (the connection closed).
  virtual std::optional<std::string> AnswerOversize() {
    return "nothing answers its writes: there is no answer to read";
  }
};

constexpr uint64_t kClaimedLength = 50 << 20;
std::string OversizeBody() { return std::string(2 << 20, 'x'); }

class HttpFixture : public SinkFixture {
 public:
  HttpFixture() : server_([this](const std::string& body, int n) { return Answer(body, n); }) {}
  std::string type() const override { return "http"; }
  void Recover() override {
    failing_ = false;
    silent_ = false;
  }
  std::string params() const override {
    return "endpoint: " + server_.url() +
           "\nencoding: payload\nbatch_size: 10\nconcurrency: 2\ntimeout: 300ms\n"
           "retry_initial: 10ms\nretry_max: 50ms\n";
  }
  std::vector<int> Delivered() override {
    std::vector<int> out;
    for (const std::string& body : server_.accepted()) {
      for (int n : Numbers(body)) out.push_back(n);
    }
    return out;
  }
  void FailTransiently() override { failing_ = true; }
  std::optional<std::string> RefuseMarked() override {
    refuse_ = true;
    return std::nullopt;
  }
  std::optional<std::string> TooLargeAbove(size_t max_events) override {
    too_large_above_ = max_events;
    return std::nullopt;
  }
  std::optional<std::string> HangFirstAttempt() override {
    hang_first_ = true;
    return std::nullopt;
  }
  std::optional<std::string> GoSilent() override {
    silent_ = true;
    return std::nullopt;
  }
  std::optional<std::string> AnswerOversize() override {
    oversize_ = true;
    return std::nullopt;
  }

  void WaitUntilAnswered() override { server_.WaitUntilIdle(std::chrono::seconds(10)); }

 private:
  testing::TestHttpReply Answer(const std::string& body, int request) {
    const std::vector<int> ns = Numbers(body);
    if (hang_first_ && request == 1) return {.hang = true};
    if (silent_) return {.hang = true};
    if (failing_) return {.status = 503, .retry_after = "0"};
    if (oversize_) {
      const bool marked = std::any_of(ns.begin(), ns.end(), [](int n) { return n >= 1000; });
      if (marked) return {.status = 400, .body = OversizeBody()};
      return {.status = 200, .body = "{\"ok\":true}", .claimed_length = kClaimedLength};
    }
    if (refuse_) {
      for (int n : ns) {
        if (n >= 1000) return {.status = 400};
      }
    }
    if (too_large_above_ > 0) {
      const bool seven = std::find(ns.begin(), ns.end(), 7) != ns.end();
      if (ns.size() > too_large_above_ || seven) return {.status = 413};
    }
    return {.status = 200};
  }

  std::atomic<bool> failing_{false};
  std::atomic<bool> silent_{false};
  bool oversize_ = false;
  bool refuse_ = false;
  bool hang_first_ = false;
  size_t too_large_above_ = 0;
  testing::TestHttpServer server_;
};

#ifdef SEEDANCE_SINK_INFLUXDB
// InfluxDB's write API as influxd 1.6 answers it, on a real HTTP server: 204 for a write; a
// refusal is a partial write (HTTP 400 quoting the refused lines, the rest written), as
// influxd does. What was written is what it answered 204 for, plus the rest of a partial
// write.
class InfluxDbFixture : public SinkFixture {
 public:
  InfluxDbFixture() : server_([this](const std::string& body, int n) { return Answer(body, n); }) {}
  std::string type() const override { return "influxdb"; }
  std::string params() const override {
    std::string endpoint = server_.url();
    endpoint.resize(endpoint.rfind('/'));
    return "endpoint: " + endpoint +
           "\ndatabase: db\nmeasurement: m\nbatch_size: 10\nconcurrency: 2\ntimeout: 300ms\n"
           "retry_initial: 10ms\nretry_max: 50ms\n";
  }
  std::vector<int> Delivered() override {
    std::lock_guard<std::mutex> lock(mu_);
    return written_;
  }
  void FailTransiently() override { failing_ = true; }
  void Recover() override {
    failing_ = false;
    silent_ = false;
  }
  std::optional<std::string> RefuseMarked() override {
    refuse_ = true;
    return std::nullopt;
  }
  std::optional<std::string> TooLargeAbove(size_t max_events) override {
    too_large_above_ = max_events;
    return std::nullopt;
  }
  std::optional<std::string> HangFirstAttempt() override {
    hang_first_ = true;
    return std::nullopt;
  }
  std::optional<std::string> GoSilent() override {
    silent_ = true;
    return std::nullopt;
  }
  std::optional<std::string> AnswerOversize() override {
    oversize_ = true;
    return std::nullopt;
  }

  void WaitUntilAnswered() override { server_.WaitUntilIdle(std::chrono::seconds(10)); }

 private:
  // The n of each line "m n=N TIME".
  static std::vector<std::pair<int, std::string>> Lines(const std::string& body) {
    static const std::regex kLine("(m n=(\\d+) \\d+)\n");
    std::vector<std::pair<int, std::string>> out;
    for (std::sregex_iterator it(body.begin(), body.end(), kLine), end; it != end; ++it) {
      out.emplace_back(std::stoi((*it)[2]), (*it)[1]);
    }
    return out;
  }

  testing::TestHttpReply Answer(const std::string& body, int request) {
    const auto lines = Lines(body);
    if (hang_first_ && request == 1) return {.hang = true};
    if (silent_) return {.hang = true};
    if (failing_) return {.status = 503, .retry_after = "0"};
    if (oversize_) {
      const bool marked =
          std::any_of(lines.begin(), lines.end(), [](const auto& l) { return l.first >= 1000; });
      if (marked) return {.status = 400, .body = OversizeBody()};
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& line : lines) written_.push_back(line.first);
      return {.status = 200, .body = "{}", .claimed_length = kClaimedLength};
    }
    if (too_large_above_ > 0) {
      const bool seven =
          std::any_of(lines.begin(), lines.end(), [](const auto& l) { return l.first == 7; });
      if (lines.size() > too_large_above_ || seven) return {.status = 413};
    }
    std::string refused;
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [n, line] : lines) {
      if (refuse_ && n >= 1000) {
        refused += (refused.empty() ? "" : "\\n") + ("unable to parse '" + line + "': refused");
      } else {
        written_.push_back(n);
      }
    }
    if (refused.empty()) return {.status = 204};
    return {.status = 400, .body = "{\"error\":\"partial write: " + refused + " dropped=0\"}"};
  }

  std::atomic<bool> failing_{false};
  std::atomic<bool> silent_{false};
  bool oversize_ = false;
  bool refuse_ = false;
  bool hang_first_ = false;
  size_t too_large_above_ = 0;
  std::mutex mu_;
  std::vector<int> written_;
  testing::TestHttpServer server_;
};
#endif  // SEEDANCE_SINK_INFLUXDB

#ifdef SEEDANCE_TEST_KAFKA
// librdkafka's mock Kafka cluster, in this process (no Kafka broker is packaged for Debian):
// three brokers, one partition replicated on all, read back from the start by a consumer.
// Failing, every broker is down (the producer's reports say the records timed out).
class KafkaFixture : public SinkFixture {
 public:
  KafkaFixture() {
    char err[512];
    host_ = rd_kafka_new(RD_KAFKA_PRODUCER, rd_kafka_conf_new(), err, sizeof err);
    if (host_ != nullptr) mock_ = rd_kafka_mock_cluster_new(host_, 3);
    if (mock_ != nullptr) {
      rd_kafka_mock_topic_create(mock_, "events", 1, 3);
      bootstraps_ = rd_kafka_mock_cluster_bootstraps(mock_);
    }
  }
  ~KafkaFixture() override {
    if (mock_ != nullptr) rd_kafka_mock_cluster_destroy(mock_);
    if (host_ != nullptr) rd_kafka_destroy(host_);
  }
  std::optional<std::string> Unavailable() const override {
    if (mock_ == nullptr) return std::string("librdkafka's mock cluster did not start");
    return std::nullopt;
  }
  std::string type() const override { return "kafka"; }
  std::string params() const override {
    return "brokers: [" + bootstraps_ +
           "]\ntopic: events\nencoding: payload\nbatch_size: 10\nmessage_timeout: 1s\n"
           "linger: 1ms\ntimeout: 5s\nretry_initial: 10ms\nretry_max: 50ms\n";
  }
  // What the partition holds up to the high watermark the broker reports when the read starts.
  // The read ends at that offset, not at the first end-of-partition event or after a quiet
  // second: a read that ended so returned nothing right after one that had found all 30 events
  // (RetriesATransientFailureUntilItRecovers, once in about 235 runs here; why the fresh
  // consumer saw no message was not found). A short read says on stderr how far it got and the
  // last error it saw.
  std::vector<int> Delivered() override {
    char err[512];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", bootstraps_.c_str(), err, sizeof err);
    rd_kafka_conf_set(conf, "group.id", "conformance", err, sizeof err);
    rd_kafka_conf_set(conf, "enable.auto.commit", "false", err, sizeof err);
    rd_kafka_t* c = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    std::vector<int> out;
    if (c == nullptr) {
      std::fprintf(stderr, "kafka fixture: no consumer: %s\n", err);
      return out;
    }
    int64_t low = 0;
    int64_t high = 0;
    // Brokers down: nothing can be read, and nothing is (within a second, as before).
    if (rd_kafka_query_watermark_offsets(c, "events", 0, &low, &high, 1000) ==
            RD_KAFKA_RESP_ERR_NO_ERROR &&
        high > low) {
      rd_kafka_topic_partition_list_t* parts = rd_kafka_topic_partition_list_new(1);
      rd_kafka_topic_partition_list_add(parts, "events", 0)->offset = low;
      rd_kafka_assign(c, parts);
      rd_kafka_topic_partition_list_destroy(parts);
      int64_t next = low;
      std::string last_error = "none";
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      while (next < high && std::chrono::steady_clock::now() < deadline) {
        rd_kafka_message_t* m = rd_kafka_consumer_poll(c, 100);
        if (m == nullptr) continue;
        if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
          for (int n : Numbers(std::string(static_cast<const char*>(m->payload), m->len))) {
            out.push_back(n);
          }
          next = m->offset + 1;
        } else if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
          last_error = rd_kafka_message_errstr(m);
        }
        rd_kafka_message_destroy(m);
      }
      if (next < high) {
        std::fprintf(
            stderr,
            "kafka fixture: read offsets %lld..%lld of %lld..%lld in 5 s (last error: %s)\n",
            static_cast<long long>(low), static_cast<long long>(next), static_cast<long long>(low),
            static_cast<long long>(high), last_error.c_str());
      }
    }
    rd_kafka_consumer_close(c);
    rd_kafka_destroy(c);
    return out;
  }
  void FailTransiently() override {
    for (int b = 1; b <= 3; ++b) rd_kafka_mock_broker_set_down(mock_, b);
  }
  void Recover() override {
    for (int b = 1; b <= 3; ++b) rd_kafka_mock_broker_set_up(mock_, b);
  }
  std::optional<std::string> RefuseMarked() override {
    return "the mock cluster refuses requests, not chosen records (a refused record is tested "
           "in tests/integration/test_kafka_sink.py)";
  }
  std::optional<std::string> TooLargeAbove(size_t) override {
    return "records are sent one by one: no batch is too large (a record too large goes to "
           "rejected; tests/integration/test_kafka_sink.py)";
  }
  std::optional<std::string> HangFirstAttempt() override {
    return "librdkafka answers every record within message_timeout, which the attempt's "
           "timeout outlasts by design";
  }
  std::optional<std::string> GoSilent() override {
    return "librdkafka ends every silent exchange itself (socket.timeout.ms, message_timeout) "
           "and the mock cluster cannot hold answers back and release them; brokers down is "
           "the transient-failure case";
  }
  std::optional<std::string> AnswerOversize() override {
    return "librdkafka bounds what it reads of a broker's answer (receive.message.max.bytes)";
  }

 private:
  rd_kafka_t* host_ = nullptr;
  rd_kafka_mock_cluster_t* mock_ = nullptr;
  std::string bootstraps_;
};
#endif  // SEEDANCE_TEST_KAFKA

#ifdef SEEDANCE_TEST_NATS
// A real nats-server with JetStream (a child process); the stream is made by the sink
// (create_stream) and read back from its start by a pull consumer. Failing, the server is
// stopped with SIGSTOP: connected, answering nothing, so PubAcks time out (as when a stream
// leader is lost); a hung first attempt is the same pause, ended by the runner's timeout.
class NatsFixture : public SinkFixture {
 public:
  explicit NatsFixture(const fs::path& dir) : server_(dir.string()) {}
  std::optional<std::string> Unavailable() const override {
    if (!server_.available()) return server_.why_unavailable();
    return std::nullopt;
  }
  std::string type() const override { return "nats"; }
  std::string params() const override {
    return "servers: [" + server_.url() +
           "]\nsubject: events.all\nstream: EVENTS\ncreate_stream: {subjects: [\"events.>\"]}\n"
           "encoding: payload\nbatch_size: 10\ntimeout: 500ms\nretry_initial: 10ms\n"
           "retry_max: 50ms\nreconnect_wait: 20ms\n";
  }
  std::vector<int> Delivered() override {
    std::vector<int> out;
    natsConnection* nc = nullptr;
    if (natsConnection_ConnectTo(&nc, server_.url().c_str()) != NATS_OK) return out;
    jsCtx* js = nullptr;
    natsSubscription* sub = nullptr;
    jsErrCode code;
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = "EVENTS";
    so.Config.AckPolicy = js_AckNone;
    if (natsConnection_JetStream(&js, nc, nullptr) == NATS_OK &&
        js_PullSubscribe(&sub, js, "events.>", nullptr, nullptr, &so, &code) == NATS_OK) {
      while (true) {
        natsMsgList list;
        if (natsSubscription_Fetch(&list, sub, 100, 300, &code) != NATS_OK) break;
        for (int i = 0; i < list.Count; ++i) {
          const std::string payload(natsMsg_GetData(list.Msgs[i]),
                                    static_cast<size_t>(natsMsg_GetDataLength(list.Msgs[i])));
          for (int n : Numbers(payload)) out.push_back(n);
        }
        natsMsgList_Destroy(&list);
      }
    }
    if (sub != nullptr) natsSubscription_Destroy(sub);
    if (js != nullptr) jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    return out;
  }
  void FailTransiently() override { paused_on_start_ = true; }
  void Recover() override {
    paused_on_start_ = false;
    server_.Resume();
  }
  // The sink checks the stream at start: the pause begins once it has (see Started()).
  void Started() override {
    if (paused_on_start_) server_.Pause();
  }
  std::optional<std::string> RefuseMarked() override {
    return "a stream refuses messages by size only (too large: rejected; see docs/nats-sink.md)";
  }
  std::optional<std::string> TooLargeAbove(size_t) override {
    return "one message per event: no batch is ever too large";
  }
  std::optional<std::string> HangFirstAttempt() override {
    return "its attempts are the server's PubAcks: a hung server is the transient failure "
           "above, ended by the same timeout";
  }
  // A stopped server: it holds the connection and answers nothing.
  std::optional<std::string> GoSilent() override {
    server_.Pause();
    return std::nullopt;
  }
  std::optional<std::string> AnswerOversize() override {
    return "its answers are PubAck messages that libnats reads within the server's "
           "max_payload: no body to cut";
  }

 private:
  testing::TestNatsServer server_;
  bool paused_on_start_ = false;
};
#endif  // SEEDANCE_TEST_NATS

// The file sink writes through a symbolic link: to /dev/full (ENOSPC) while failing.
class FileFixture : public SinkFixture {
 public:
  explicit FileFixture(const fs::path& dir) : dir_(dir) { Point(dir_ / "out.ndjson"); }
  std::string type() const override { return "file"; }
  std::string params() const override {
    return "path: " + (dir_ / "link").string() +
           "\nencoding: payload\nbatch_size: 10\nretry_initial: 10ms\nretry_max: 50ms\n";
  }
  std::vector<int> Delivered() override { return Numbers(ReadAll((dir_ / "out.ndjson").string())); }
  void FailTransiently() override { Point("/dev/full"); }
  void Recover() override { Point(dir_ / "out.ndjson"); }

 private:
  void Point(const fs::path& target) {
    fs::remove(dir_ / "link.new");
    fs::create_symlink(target, dir_ / "link.new");
    fs::rename(dir_ / "link.new", dir_ / "link");  // atomic
  }
  fs::path dir_;
};

// Standard output redirected: to a file, or to /dev/full while failing.
class StdoutFixture : public SinkFixture {
 public:
  explicit StdoutFixture(const fs::path& dir) : path_((dir / "stdout.ndjson").string()) {
    std::fflush(stdout);
    saved_ = ::dup(STDOUT_FILENO);
    file_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    full_ = ::open("/dev/full", O_WRONLY | O_CLOEXEC);
    ::dup2(file_, STDOUT_FILENO);
  }
  ~StdoutFixture() override {
    ::dup2(saved_, STDOUT_FILENO);
    for (int fd : {saved_, file_, full_}) ::close(fd);
  }
  std::string type() const override { return "stdout"; }
  std::string params() const override {
    return "encoding: payload\nbatch_size: 10\nretry_initial: 10ms\nretry_max: 50ms\n";
  }
  std::vector<int> Delivered() override { return Numbers(ReadAll(path_)); }
  void FailTransiently() override { ::dup2(full_, STDOUT_FILENO); }
  void Recover() override { ::dup2(file_, STDOUT_FILENO); }

 private:
  std::string path_;
  int saved_ = -1, file_ = -1, full_ = -1;
};

// A real mosquitto broker; what reached the far side is what a subscriber on it got (our own
// MQTT client, subscribed before the sink starts). The sink logs in as user "sink": failing,
// the password file says otherwise (the broker refuses the connection; SIGHUP reloads it);
// refusing, the ACL lets it write only topics t/0 … t/999 (MQTT 5 PUBACK 0x87 for n ≥ 1000).
class MqttFixture : public SinkFixture {
 public:
  explicit MqttFixture(const fs::path& dir) : dir_(dir) {
    WritePasswords(/*sink_allowed=*/true);
    std::ofstream acl(dir_ / "acl");
    acl << "user sub\ntopic read t/#\nuser sink\n";
    for (int n = 0; n < 1000; ++n) acl << "topic write t/" << n << "\n";
    acl.close();
    broker_ = std::make_unique<testing::TestMqttBroker>(
        dir_.string(), "allow_anonymous false\npassword_file " + (dir_ / "passwd").string() +
                           "\nacl_file " + (dir_ / "acl").string() + "\n");
    if (!broker_->available()) return;
    mqtt::ClientOptions o;
    o.host = "127.0.0.1";
    o.port = static_cast<uint16_t>(broker_->port());
    o.client_id = "conformance-subscriber";
    o.username = "sub";
    o.password = "sub";
    o.reconnect_min = milliseconds(10);
    o.subscriptions = {{"t/#", 1}};
    subscriber_ = std::make_shared<mqtt::Client>(
        loop_.io(), o,
        [this](mqtt::Publish& m, uint64_t token, std::string_view) {
          {
            std::lock_guard<std::mutex> lock(mu_);
            for (int n : Numbers(m.payload)) received_.push_back(n);
          }
          if (token != 0) subscriber_->Acknowledge(token);
          return true;
        },
        [this](mqtt::ClientState s, const std::string&, bool) {
          if (s == mqtt::ClientState::kConnected) subscribed_ = true;
        });
    loop_.Start();
    loop_.Post([this] { subscriber_->Start(); });
    // Connected means SUBSCRIBE was sent; its SUBACK precedes anything published after it.
    for (int i = 0; i < 500 && !subscribed_; ++i) std::this_thread::sleep_for(milliseconds(10));
    std::this_thread::sleep_for(milliseconds(100));
  }
  ~MqttFixture() override {
    if (subscriber_) loop_.Call([&] { subscriber_->Close(); });
    loop_.Join();
  }
  std::optional<std::string> Unavailable() const override {
    if (!broker_->available()) return broker_->why_unavailable();
    if (!subscribed_) return std::string("the subscriber could not connect");
    return std::nullopt;
  }
  std::string type() const override { return "mqtt"; }
  std::string params() const override {
    return "uri: " + broker_->uri() +
           "\ntopic: \"t/{payload.n}\"\nusername: sink\npassword: sink\nclient_id: "
           "conformance-sink\nbatch_size: 10\nconcurrency: 2\ntimeout: 2s\n"
           "retry_initial: 10ms\nretry_max: 50ms\nreconnect_min: 10ms\nreconnect_max: 50ms\n";
  }
  std::vector<int> Delivered() override {
    std::lock_guard<std::mutex> lock(mu_);
    return received_;
  }
  void FailTransiently() override {
    WritePasswords(/*sink_allowed=*/false);
    broker_->Reload();
  }
  void Recover() override {
    broker_->Resume();
    WritePasswords(/*sink_allowed=*/true);
    broker_->Reload();
  }
  // A stopped mosquitto (SIGSTOP): it holds the connection and sends no PUBACK.
  std::optional<std::string> GoSilent() override {
    broker_->Pause();
    return std::nullopt;
  }
  std::optional<std::string> AnswerOversize() override {
    return "its answers are PUBACKs; a broker's packet over max_packet_size costs one message, "
           "never buffered (tests/integration/test_mqtt_misbehaving_broker.py)";
  }
  std::optional<std::string> RefuseMarked() override { return std::nullopt; }
  std::optional<std::string> TooLargeAbove(size_t) override {
    return "one message per event: no batch is ever too large for a broker (a single message "
           "over its maximum packet size goes to rejected)";
  }
  std::optional<std::string> HangFirstAttempt() override {
    return "an attempt aborted at its timeout still has its messages in flight, which the "
           "broker delivers later, so the retry repeats them (at-least-once), where this case "
           "expects each event once";
  }

 private:
  void WritePasswords(bool sink_allowed) {
    ASSERT_TRUE(testing::WriteMosquittoPasswords(
        (dir_ / "passwd").string(), {{"sub", "sub"}, {"sink", sink_allowed ? "sink" : "other"}}));
  }

  fs::path dir_;
  std::unique_ptr<testing::TestMqttBroker> broker_;
  EventLoop loop_;
  std::shared_ptr<mqtt::Client> subscriber_;
  std::atomic<bool> subscribed_{false};
  std::mutex mu_;
  std::vector<int> received_;
};

class SinkConformanceTest : public ::testing::TestWithParam<std::string> {
 protected:
  SinkConformanceTest() {
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (char& c : name) {
      if (c == '/') c = '_';
    }
    dir_ =
        fs::temp_directory_path() / ("sink_conformance_" + std::to_string(::getpid()) + "_" + name);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    queue_config_.data_dir = (dir_ / "queue").string();
    if (GetParam() == "http") fixture_ = std::make_unique<HttpFixture>();
#ifdef SEEDANCE_SINK_INFLUXDB
    if (GetParam() == "influxdb") fixture_ = std::make_unique<InfluxDbFixture>();
#endif
#ifdef SEEDANCE_TEST_KAFKA
    if (GetParam() == "kafka") fixture_ = std::make_unique<KafkaFixture>();
#endif
#ifdef SEEDANCE_TEST_NATS
    if (GetParam() == "nats") fixture_ = std::make_unique<NatsFixture>(dir_);
#endif
    if (GetParam() == "file") fixture_ = std::make_unique<FileFixture>(dir_);
    if (GetParam() == "stdout") fixture_ = std::make_unique<StdoutFixture>(dir_);
    if (GetParam() == "mqtt") fixture_ = std::make_unique<MqttFixture>(dir_);
  }
  void SetUp() override {
    if (auto why = fixture_->Unavailable()) GTEST_SKIP() << fixture_->type() << ": " << *why;
  }
  ~SinkConformanceTest() override {
    StopRunner();
    fixture_.reset();
    fs::remove_all(dir_);
  }

  template <typename Fn>
  auto OnLoop(Fn fn) {
    return loop_->Call(fn);
  }

  // Opens the queue and starts a runner over a new sink, with a memory budget if asked.
  void StartRunner(bool with_budget = false) {
    auto queue = storage::DurableQueue::Open(queue_config_, metrics_);
    ASSERT_TRUE(queue.has_value()) << queue.error().ToString();
    queue_ = std::move(queue).value();
    if (with_budget) {
      governor::MemoryBudgetOptions o;
      o.capacity = 64 << 20;
      o.policy.idle_steps = 1;
      budget_ = std::make_unique<governor::MemoryBudget>(o, metrics_);
    }
    loop_ = std::make_unique<EventLoop>();
    stats_ = std::make_unique<ComponentStats>(metrics_, "sink", "out");
    const Params params = testing::SinkParams(fixture_->type(), fixture_->params());
    const SinkFactory* factory = harness_.registry.FindSink(fixture_->type());
    ASSERT_NE(factory, nullptr);
    PluginContext ctx;
    ctx.name = "out";
    ctx.loop = loop_.get();
    ctx.metrics = &metrics_;
    ctx.stats = stats_.get();
    ctx.memory = budget_.get();
    auto policy = ReadDeliveryPolicy(params, factory->delivery);
    ASSERT_TRUE(policy.has_value());
    ctx.attempt_timeout = policy->timeout;  // as the pipeline sets it
    auto sink = factory->create(params, ctx);
    ASSERT_TRUE(sink.has_value()) << sink.error().ToString();
    ASSERT_TRUE((*sink)->Start().ok());
    fixture_->Started();
    runner_ = std::make_unique<SinkRunner>(
        "out", std::move(sink).value(), std::move(policy).value(), 100, *loop_, *stats_,
        [this](Event&& e, const std::string& reason) {
          std::lock_guard<std::mutex> lock(mu_);
          rejected_.emplace_back(Numbers(e.payload).at(0), reason);
        },
        queue_->OpenCursor("out", {Output::kMain}), budget_.get());
    if (budget_) budget_->AddHolder(runner_.get());
    loop_->Start();
    runner_->NotifyAppended();  // what the queue left from before
  }

  void StopRunner() {
    if (!runner_) return;
    OnLoop([&] {
      runner_->Stop();
      return 0;
    });
    loop_->Join();
    if (budget_) budget_->RemoveHolder(runner_.get());
    runner_.reset();
    queue_.reset();
    budget_.reset();
    loop_.reset();
  }

  void Append(int from, int to) {
    for (int n = from; n < to; ++n) {
      Event e;
      e.payload = "{\"n\":" + std::to_string(n) + "}";
      e.format = PayloadFormat::kJson;
      ASSERT_TRUE(queue_->Append(Output::kMain, e).ok());
    }
    ASSERT_TRUE(queue_->Commit().ok());
    runner_->NotifyAppended();
  }

  // Waits up to 10 s for `done`.
  template <typename Fn>
  bool WaitFor(Fn done) {
    const auto deadline = steady_clock::now() + std::chrono::seconds(10);
    while (!done()) {
      if (steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(milliseconds(5));
    }
    return true;
  }

  // Waits until the runner has nothing pending and `n` events reached the far side: a broker
  // acknowledges the sink before its subscriber has the message.
  bool WaitDelivered(size_t n) {
    return WaitFor([&] { return runner_->Pending() == 0 && fixture_->Delivered().size() >= n; });
  }

  uint64_t Retries() { return stats_->retries.Value(); }
  size_t RejectedCount() {
    std::lock_guard<std::mutex> lock(mu_);
    return rejected_.size();
  }
  // Each of [from, to) delivered at least once (an attempt ended at its timeout may have
  // been taken all the same: its retry repeats it).
  void ExpectEachAtLeastOnce(const std::vector<int>& delivered, int from, int to) {
    std::map<int, int> count;
    for (int n : delivered) ++count[n];
    for (int n = from; n < to; ++n) EXPECT_GE(count[n], 1) << "event " << n;
  }
  // Each of [from, to) delivered exactly once.
  void ExpectEachOnce(const std::vector<int>& delivered, int from, int to,
                      const std::vector<int>& except = {}) {
    std::map<int, int> count;
    for (int n : delivered) ++count[n];
    for (int n = from; n < to; ++n) {
      const bool excepted = std::find(except.begin(), except.end(), n) != except.end();
      EXPECT_EQ(count[n], excepted ? 0 : 1) << "event " << n;
    }
  }

  testing::Harness harness_;
  observe::MetricsRegistry metrics_;
  fs::path dir_;
  storage::QueueConfig queue_config_;
  std::unique_ptr<SinkFixture> fixture_;
  std::unique_ptr<governor::MemoryBudget> budget_;
  std::unique_ptr<EventLoop> loop_;
  std::unique_ptr<ComponentStats> stats_;
  std::unique_ptr<storage::DurableQueue> queue_;
  std::unique_ptr<SinkRunner> runner_;
  std::mutex mu_;
  std::vector<std::pair<int, std::string>> rejected_;
};

TEST_P(SinkConformanceTest, DeliversEveryEventOnce) {
  StartRunner();
  Append(0, 95);
  ASSERT_TRUE(
      WaitFor([&] { return fixture_->Delivered().size() >= 95 && runner_->Pending() == 0; }));
  ExpectEachOnce(fixture_->Delivered(), 0, 95);
  EXPECT_EQ(stats_->events_out.Value(), 95u);
  EXPECT_EQ(RejectedCount(), 0u);
}

TEST_P(SinkConformanceTest, RetriesATransientFailureUntilItRecovers) {
  fixture_->FailTransiently();
  StartRunner();
  Append(0, 30);
  ASSERT_TRUE(WaitFor([&] { return Retries() >= 3; }));
  EXPECT_TRUE(fixture_->Delivered().empty());
  fixture_->Recover();
  ASSERT_TRUE(WaitDelivered(30));
  ExpectEachOnce(fixture_->Delivered(), 0, 30);
  EXPECT_EQ(stats_->events_out.Value(), 30u);
  EXPECT_EQ(RejectedCount(), 0u);
}

TEST_P(SinkConformanceTest, RoutesRefusedEventsToRejected) {
  if (auto why = fixture_->RefuseMarked()) GTEST_SKIP() << fixture_->type() << ": " << *why;
  StartRunner();
  Append(0, 10);       // one batch, accepted
  Append(1000, 1010);  // one batch, refused
  ASSERT_TRUE(WaitDelivered(10));
  ExpectEachOnce(fixture_->Delivered(), 0, 10);
  std::lock_guard<std::mutex> lock(mu_);
  ASSERT_EQ(rejected_.size(), 10u);
  for (const auto& [n, reason] : rejected_) {
    EXPECT_GE(n, 1000);
    EXPECT_FALSE(reason.empty());
  }
  EXPECT_EQ(stats_->events_out.Value(), 10u);
}

TEST_P(SinkConformanceTest, SplitsABatchTooLargeForTheRemoteSide) {
  if (auto why = fixture_->TooLargeAbove(3)) GTEST_SKIP() << fixture_->type() << ": " << *why;
  StartRunner();
  Append(0, 20);
  ASSERT_TRUE(WaitFor([&] { return runner_->Pending() == 0; }));
  // Halved down to what fits; event 7 is too large even alone: rejected, the rest delivered.
  ExpectEachOnce(fixture_->Delivered(), 0, 20, {7});
  std::lock_guard<std::mutex> lock(mu_);
  ASSERT_EQ(rejected_.size(), 1u);
  EXPECT_EQ(rejected_[0].first, 7);
  EXPECT_EQ(stats_->events_out.Value(), 19u);
}

TEST_P(SinkConformanceTest, AnAttemptPastTheTimeoutIsAbortedAndRetried) {
  if (auto why = fixture_->HangFirstAttempt()) GTEST_SKIP() << fixture_->type() << ": " << *why;
  StartRunner();
  Append(0, 10);
  ASSERT_TRUE(WaitDelivered(10));
  ExpectEachOnce(fixture_->Delivered(), 0, 10);
  EXPECT_GE(Retries(), 1u);
}

TEST_P(SinkConformanceTest, APeerThatAcceptsAndNeverAnswersCostsOnlyTheTimeout) {
  StartRunner();
  Append(0, 10);
  ASSERT_TRUE(WaitDelivered(10));  // connected, and delivering
  if (auto why = fixture_->GoSilent()) GTEST_SKIP() << fixture_->type() << ": " << *why;
  Append(10, 20);
  // Each attempt ends at the timeout and is retried: none waits for ever.
  ASSERT_TRUE(WaitFor([&] { return Retries() >= 2; })) << Retries();
  EXPECT_EQ(stats_->events_out.Value(), 10u);
  fixture_->Recover();
  ASSERT_TRUE(WaitDelivered(20));
  Append(20, 30);  // and the sink is not left stalled
  ASSERT_TRUE(WaitDelivered(30));
  ExpectEachAtLeastOnce(fixture_->Delivered(), 0, 30);
  EXPECT_EQ(stats_->events_out.Value(), 30u);
  EXPECT_EQ(RejectedCount(), 0u);
}

TEST_P(SinkConformanceTest, AnOversizeAnswerIsDecidedByItsStatusNotRetriedForEver) {
  if (auto why = fixture_->AnswerOversize()) GTEST_SKIP() << fixture_->type() << ": " << *why;
  StartRunner();
  Append(0, 10);       // taken: an answer that claims 50 MB and is cut short
  Append(1000, 1010);  // refused: a 2 MiB answer
  ASSERT_TRUE(WaitFor([&] { return runner_->Pending() == 0; })) << Retries();
  ExpectEachOnce(fixture_->Delivered(), 0, 10);
  EXPECT_EQ(stats_->events_out.Value(), 10u);
  std::lock_guard<std::mutex> lock(mu_);
  ASSERT_EQ(rejected_.size(), 10u);
  for (const auto& [n, reason] : rejected_) EXPECT_GE(n, 1000);
}

TEST_P(SinkConformanceTest, EvictedWhileWaitingIsReadAgainFromTheQueue) {
  fixture_->FailTransiently();
  StartRunner(/*with_budget=*/true);
  Append(0, 30);
  ASSERT_TRUE(WaitFor([&] { return Retries() >= 1; }));
  // The governor's step evicts a batch that waits for a retry (not one being sent: retry).
  auto& evictions = metrics_.GetCounter("seedance_memory_evictions_total", "", {});
  ASSERT_TRUE(WaitFor([&] {
    OnLoop([&] { return budget_->Step(); });
    return evictions.Value() >= 1;
  }));
  fixture_->Recover();
  ASSERT_TRUE(WaitDelivered(30));
  ExpectEachOnce(fixture_->Delivered(), 0, 30);
  EXPECT_EQ(RejectedCount(), 0u);
  EXPECT_EQ(budget_->used(), 0u);
}

TEST_P(SinkConformanceTest, ShutdownWithWorkInFlightLosesNothing) {
  fixture_->FailTransiently();
  StartRunner();
  Append(0, 20);
  ASSERT_TRUE(WaitFor([&] { return Retries() >= 1; }));
  StopRunner();  // attempts waiting or in progress end as shut down, not rejected
  EXPECT_EQ(stats_->events_out.Value(), 0u);
  EXPECT_EQ(RejectedCount(), 0u);
  // Refused too, what the stopped sink sent and the far side had not yet read (under qemu an
  // influxdb request was read after Recover(), taken, and its 10 events came twice).
  fixture_->WaitUntilAnswered();
  // After a restart the same events come again from the durable queue.
  fixture_->Recover();
  const uint64_t retried = Retries();  // the counters outlive the runner
  StartRunner();
  ASSERT_TRUE(
      WaitFor([&] { return runner_->Pending() == 0 && fixture_->Delivered().size() >= 20; }));
  if (Retries() == retried) {
    ExpectEachOnce(fixture_->Delivered(), 0, 20);
  } else {
    // An attempt of the restarted runner failed and may have been taken all the same, so its
    // retry repeats what was written: the documented at-least-once. (Seen in CI for kafka: on
    // a loaded machine the 1 s message_timeout passed before the new producer had its answers,
    // with 2 of the 10 records written.)
    ExpectEachAtLeastOnce(fixture_->Delivered(), 0, 20);
  }
}

// A sink stopped and destroyed at once, with deliveries in flight, leaves nothing that calls
// back into it: client libraries call back on their own threads (libnats ran more than half of
// a closed connection's handlers after natsConnection_Destroy had returned), and a callback
// into a destroyed sink is a use after free, which the sanitizer build reports. The pauses
// give such callbacks time to run while the sink's memory is gone.
TEST_P(SinkConformanceTest, StoppedAndDestroyedAtOnceLeavesNothingCallingBack) {
  constexpr int kRounds = 4;
  constexpr int kPerRound = 10;
  for (int round = 0; round < kRounds; ++round) {
    StartRunner();
    Append(round * kPerRound, (round + 1) * kPerRound);
    if (round % 2 == 1) WaitFor([&] { return fixture_->Delivered().size() > 0; });
    StopRunner();
    std::this_thread::sleep_for(milliseconds(50));
  }
  StartRunner();  // whatever the stops left is sent now
  ASSERT_TRUE(WaitDelivered(kRounds * kPerRound));
  ExpectEachAtLeastOnce(fixture_->Delivered(), 0, kRounds * kPerRound);
  EXPECT_EQ(RejectedCount(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Sinks, SinkConformanceTest,
                         ::testing::Values("http",
#ifdef SEEDANCE_SINK_INFLUXDB
                                           "influxdb",
#endif
#ifdef SEEDANCE_TEST_KAFKA
                                           "kafka",
#endif
#ifdef SEEDANCE_TEST_NATS
                                           "nats",
#endif
                                           "file", "stdout", "mqtt"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace seedance
