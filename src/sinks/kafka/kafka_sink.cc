#include "sinks/kafka/kafka_sink.h"

#include <fmt/format.h>

#include <atomic>
#include <memory>
#include <optional>
#include <thread>

#include "seedance/options.h"
#include "seedance/plugin_context.h"
#include "seedance/sink.h"
#include "sinks/common/event_encoding.h"
#include "sinks/common/event_template.h"
#include "sinks/common/header_selection.h"
#include "sinks/common/message_acks.h"
#include "sinks/kafka/kafka_library.h"
#include "util/log.h"
#include "util/strings.h"

namespace seedance::sinks {
namespace {

using std::chrono::milliseconds;

struct KafkaSinkOptions {
  std::vector<std::string> brokers;
  std::string topic_text;
  std::optional<EventTemplate> topic;
  std::string key_text;
  std::optional<EventTemplate> key;
  std::string compression = "none";
  EventEncoding encoding = EventEncoding::kPayload;
  std::vector<std::string> event_headers{"*"};
  milliseconds message_timeout{30000};
  milliseconds linger{5};
  StringPairs properties;
};

// librdkafka's configuration for the sink: ours, then the user's `properties` (which may not
// undo what delivery depends on).
class KafkaConfig {
 public:
  explicit KafkaConfig(const KafkaLibrary& lib) : lib_(lib), conf_(lib.rd_kafka_conf_new()) {}
  ~KafkaConfig() {
    if (conf_ != nullptr) lib_.rd_kafka_conf_destroy(conf_);
  }
  Status Set(const std::string& name, const std::string& value) {
    char error[512] = "";
    if (lib_.rd_kafka_conf_set(conf_, name.c_str(), value.c_str(), error, sizeof error) !=
        RD_KAFKA_CONF_OK) {
      return InvalidArgumentError(fmt::format("{}: {}", name, error));
    }
    return Status::Ok();
  }
  // Hands the configuration to rd_kafka_new (which owns it from then on).
  rd_kafka_conf_t* Release() {
    rd_kafka_conf_t* c = conf_;
    conf_ = nullptr;
    return c;
  }
  rd_kafka_conf_t* get() { return conf_; }

 private:
  const KafkaLibrary& lib_;
  rd_kafka_conf_t* conf_;
};

// Properties the sink sets for its guarantees: `properties` may not change them.
bool IsFixedProperty(const std::string& name) {
  return name == "enable.idempotence" || name == "acks" || name == "request.required.acks" ||
         name == "bootstrap.servers" || name == "metadata.broker.list" ||
         name == "message.timeout.ms" || name == "delivery.timeout.ms" ||
         name == "compression.codec" || name == "compression.type" || name == "linger.ms" ||
         name == "queue.buffering.max.ms" || name == "dr_msg_cb" || name == "dr_cb";
}

Status Configure(const KafkaLibrary& lib, const KafkaSinkOptions& o, const std::string& client_id,
                 KafkaConfig& conf) {
  SEEDANCE_RETURN_IF_ERROR(
      conf.Set("bootstrap.servers", fmt::format("{}", fmt::join(o.brokers, ","))));
  SEEDANCE_RETURN_IF_ERROR(conf.Set("client.id", client_id));
  // At least once, in order, without duplicates from the producer's own retries.
  SEEDANCE_RETURN_IF_ERROR(conf.Set("enable.idempotence", "true"));
  SEEDANCE_RETURN_IF_ERROR(conf.Set("acks", "all"));
  SEEDANCE_RETURN_IF_ERROR(
      conf.Set("message.timeout.ms", std::to_string(o.message_timeout.count())));
  SEEDANCE_RETURN_IF_ERROR(conf.Set("linger.ms", std::to_string(o.linger.count())));
  SEEDANCE_RETURN_IF_ERROR(conf.Set("compression.codec", o.compression));
  for (const auto& [name, value] : o.properties) {
    if (IsFixedProperty(name)) {
      return InvalidArgumentError(fmt::format(
          "properties: {} is set by the sink (brokers, compression, linger, message_timeout; "
          "idempotence and acks=all are what delivery counts on)",
          name));
    }
    SEEDANCE_RETURN_IF_ERROR(conf.Set(name, value));
  }
  (void)lib;
  return Status::Ok();
}

// What a message's delivery report or a refused produce call means: refused for good (the
// event to `rejected`) or worth another try.
bool IsRefusal(rd_kafka_resp_err_t err) {
  switch (err) {
    case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
    case RD_KAFKA_RESP_ERR_INVALID_MSG_SIZE:
    case RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE:
    case RD_KAFKA_RESP_ERR_INVALID_MSG:
    case RD_KAFKA_RESP_ERR_INVALID_RECORD:
    case RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION:
      return true;
    default:
      return false;
  }
}

class KafkaProducer {
 public:
  KafkaProducer(const KafkaLibrary& lib, KafkaSinkOptions o, PluginContext ctx)
      : lib_(lib),
        o_(std::move(o)),
        ctx_(std::move(ctx)),
        acks_(std::make_shared<MessageAcks>(*ctx_.loop)),
        headers_(o_.event_headers, /*text_fields=*/false) {}
  ~KafkaProducer() { Close(); }

  Status Start();
  void Attempt(uint64_t id, const Batch& batch, AttemptCallback done);
  void Abort(uint64_t id) {
    // Its records may still be written (librdkafka retries until message_timeout): the retry
    // repeats them (at least once).
    acks_->Abort(id, "no delivery report for every message within the timeout");
  }
  void Stop() {
    stopped_ = true;
    Close();
    acks_->StopAll();
  }

 private:
  // A message's place: freed by its delivery report.
  struct Slot {
    MessageAcks::Handle attempt;
    size_t index = 0;
  };
  static void OnDelivery(rd_kafka_t* rk, const rd_kafka_message_t* m, void* opaque);
  static void OnError(rd_kafka_t* rk, int err, const char* reason, void* opaque);
  static void OnLog(const rd_kafka_t* rk, int level, const char* facility, const char* text);
  void Close();

  const KafkaLibrary& lib_;
  KafkaSinkOptions o_;
  PluginContext ctx_;
  std::shared_ptr<MessageAcks> acks_;
  HeaderSelection headers_;
  rd_kafka_t* rk_ = nullptr;
  std::thread poller_;  // serves delivery reports (rd_kafka_poll)
  std::atomic<bool> polling_{false};
  bool stopped_ = false;
};

Status KafkaProducer::Start() {
  KafkaConfig conf(lib_);
  SEEDANCE_RETURN_IF_ERROR(Configure(lib_, o_, "seedance-" + ctx_.name, conf));
  lib_.rd_kafka_conf_set_dr_msg_cb(conf.get(), &KafkaProducer::OnDelivery);
  lib_.rd_kafka_conf_set_error_cb(conf.get(), &KafkaProducer::OnError);
  lib_.rd_kafka_conf_set_log_cb(conf.get(), &KafkaProducer::OnLog);
  lib_.rd_kafka_conf_set_opaque(conf.get(), this);
  char error[512] = "";
  rk_ = lib_.rd_kafka_new(RD_KAFKA_PRODUCER, conf.get(), error, sizeof error);
  if (rk_ == nullptr) return InvalidArgumentError(fmt::format("kafka: {}", error));
  conf.Release();  // rd_kafka_new took it
  polling_ = true;
  poller_ = std::thread([this] {
    while (polling_.load(std::memory_order_relaxed)) lib_.rd_kafka_poll(rk_, 100);
  });
  SEEDANCE_LOG_INFO(ctx_.name, "producing to {} (librdkafka {}, idempotent, acks=all)",
                    fmt::join(o_.brokers, ","), lib_.rd_kafka_version_str());
  return Status::Ok();
}

void KafkaProducer::Attempt(uint64_t id, const Batch& batch, AttemptCallback done) {
  if (stopped_ || rk_ == nullptr) return done(AttemptOutcome::Shutdown());
  const MessageAcks::Handle a = acks_->Begin(id, std::move(done));
  std::string topic, key, why, body;
  std::vector<rd_kafka_vu_t> vus;
  for (size_t i = 0; i < batch.events.size(); ++i) {
    const Event& e = batch.events[i];
    PayloadView payload(e);
    if (!o_.topic->Render(e, payload, &topic, &why)) {
      acks_->RefuseUnsent(a, i, "kafka: " + why);
      continue;
    }
    if (std::string bad = CheckKafkaTopic(topic); !bad.empty()) {
      acks_->RefuseUnsent(a, i, "kafka: topic: " + bad);
      continue;
    }
    // A key that cannot be filled leaves the record without one (any partition).
    const bool has_key = o_.key && o_.key->Render(e, payload, &key, &why);
    body.clear();
    AppendEvent(e, o_.encoding, /*as_json_value=*/false, body);
    vus.clear();
    auto vu = [&vus](rd_kafka_vtype_t type) -> rd_kafka_vu_t& {
      vus.push_back(rd_kafka_vu_t{});
      vus.back().vtype = type;
      return vus.back();
    };
    vu(RD_KAFKA_VTYPE_TOPIC).u.cstr = topic.c_str();
    auto& value = vu(RD_KAFKA_VTYPE_VALUE);
    value.u.mem.ptr = body.data();
    value.u.mem.size = body.size();
    if (has_key) {
      auto& k = vu(RD_KAFKA_VTYPE_KEY);
      k.u.mem.ptr = key.data();
      k.u.mem.size = key.size();
    }
    vu(RD_KAFKA_VTYPE_MSGFLAGS).u.i = RD_KAFKA_MSG_F_COPY;
    // Kafka's record headers are bytes: no text-field check.
    headers_.ForEach(e, [&](const Header& h) {
      auto& hv = vu(RD_KAFKA_VTYPE_HEADER);
      hv.u.header.name = h.name.c_str();
      hv.u.header.val = h.value.data();
      hv.u.header.size = static_cast<ssize_t>(h.value.size());
    });
    auto* slot = new Slot{a, i};
    vu(RD_KAFKA_VTYPE_OPAQUE).u.ptr = slot;
    acks_->Sent(a);
    rd_kafka_error_t* error = lib_.rd_kafka_produceva(rk_, vus.data(), vus.size());
    if (error == nullptr) continue;
    const rd_kafka_resp_err_t err = lib_.rd_kafka_error_code(error);
    const std::string text = lib_.rd_kafka_error_string(error);
    lib_.rd_kafka_error_destroy(error);
    delete slot;  // no delivery report for a message that was not queued
    if (IsRefusal(err)) {
      acks_->Refused(a, i, "kafka: " + text);
      continue;
    }
    acks_->Failed(a, "kafka: produce: " + text);
    break;
  }
  acks_->Launched(a);
}

void KafkaProducer::OnDelivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
  auto* self = static_cast<KafkaProducer*>(opaque);
  std::unique_ptr<Slot> slot(static_cast<Slot*>(m->_private));
  if (!slot) return;
  if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) return self->acks_->Acked(slot->attempt);
  const std::string text = self->lib_.rd_kafka_err2str(m->err);
  if (IsRefusal(m->err)) return self->acks_->Refused(slot->attempt, slot->index, "kafka: " + text);
  self->acks_->Failed(slot->attempt, "kafka: not delivered: " + text);
}

void KafkaProducer::OnError(rd_kafka_t* rk, int err, const char* reason, void* opaque) {
  auto* self = static_cast<KafkaProducer*>(opaque);
  if (err == RD_KAFKA_RESP_ERR__FATAL) {
    char why[512] = "";
    self->lib_.rd_kafka_fatal_error(rk, why, sizeof why);
    SEEDANCE_LOG_ERROR(self->ctx_.name, "kafka: fatal producer error: {}", why);
    return;
  }
  // Transient (a broker down, all brokers down): librdkafka retries; logged at most once per
  // interval.
  uint64_t suppressed = 0;
  static util::LogLimiter limiter;
  if (limiter.Allow("kafka-error", &suppressed)) {
    SEEDANCE_LOG_WARN(self->ctx_.name, "kafka: {}{}", reason,
                      suppressed ? fmt::format(" ({} similar not logged)", suppressed) : "");
  }
}

// librdkafka's own log lines (syslog levels), in ours rather than on stderr in its format.
// Warnings (4) are left out: they repeat what the error callback reports.
void KafkaProducer::OnLog(const rd_kafka_t*, int level, const char* facility, const char* text) {
  if (level <= 3) {
    SEEDANCE_LOG_WARN("kafka", "librdkafka {}: {}", facility, text);
  } else if (level == 5 || level == 6) {
    SEEDANCE_LOG_INFO("kafka", "librdkafka {}: {}", facility, text);
  }
}

void KafkaProducer::Close() {
  if (rk_ == nullptr) return;
  // What is still queued was not delivered: the runner sends it again after a restart.
  lib_.rd_kafka_purge(rk_, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
  lib_.rd_kafka_flush(rk_, 1000);  // serves the purged messages' delivery reports
  polling_ = false;
  if (poller_.joinable()) poller_.join();
  lib_.rd_kafka_destroy(rk_);
  rk_ = nullptr;
}

class KafkaSink final : public Sink {
 public:
  explicit KafkaSink(std::unique_ptr<KafkaProducer> p) : producer_(std::move(p)) {}
  Status Start() override { return producer_->Start(); }
  void Attempt(uint64_t id, const Batch& batch, AttemptCallback done) override {
    producer_->Attempt(id, batch, std::move(done));
  }
  void Abort(uint64_t id) override { producer_->Abort(id); }
  void Stop() override { producer_->Stop(); }

 private:
  std::unique_ptr<KafkaProducer> producer_;
};

const Options<KafkaSinkOptions>& KafkaSinkSchema() {
  using S = KafkaSinkOptions;
  static const Options<S> o =
      Options<S>()
          .Add(&S::brokers, {.name = "brokers",
                             .doc = "bootstrap brokers, e.g. [127.0.0.1:9092]",
                             .required = true})
          .Add(&S::topic_text,
               {.name = "topic",
                .doc = "topic: text with placeholders ({topic}, {topic.N}, {payload.FIELD}, "
                       "{header.NAME}); MQTT topics have '/', Kafka topics may not",
                .required = true,
                .validator = TemplateValidator("topic")})
          .Add(&S::key_text,
               {.name = "key",
                .doc = "record key (partitioning), e.g. \"{payload.device}\"; none when unset or "
                       "when the event has no value for it",
                .validator = TemplateValidator("key")})
          .Enum(&S::compression,
                {.name = "compression",
                 .doc = "record batch compression: none, gzip, snappy, lz4 or zstd",
                 .default_value = "none"},
                {{"none", "none"},
                 {"gzip", "gzip"},
                 {"snappy", "snappy"},
                 {"lz4", "lz4"},
                 {"zstd", "zstd"}})
          .Enum(&S::encoding,
                {.name = "encoding",
                 .doc = "each record: the event's payload, or an envelope with id, topic, time "
                        "and payload",
                 .default_value = "payload"},
                EventEncodingChoices())
          .Add(&S::event_headers,
               {.name = "event_headers",
                .doc = "event headers sent as record headers, by name or prefix (mqtt_*); "
                       "default all",
                .default_value = "[\"*\"]"})
          .Add(&S::message_timeout,
               {.name = "message_timeout",
                .doc = "how long librdkafka tries to deliver a record before its report says it "
                       "failed (then the batch is retried)",
                .default_value = "30s"})
          .Add(&S::linger, {.name = "linger",
                            .doc = "librdkafka's linger.ms: time to fill a record batch",
                            .default_value = "5ms"})
          .Add(&S::properties,
               {.name = "properties",
                .doc = "librdkafka properties passed through, e.g. security.protocol: SASL_SSL, "
                       "sasl.mechanisms: PLAIN, ssl.ca.location"});
  return o;
}

}  // namespace

std::string CheckKafkaTopic(std::string_view topic) {
  if (topic.empty()) return "the topic is empty";
  if (topic.size() > 249) return fmt::format("{} bytes (at most 249)", topic.size());
  if (topic == "." || topic == "..") return "\".\" and \"..\" are not topic names";
  for (char c : topic) {
    const auto u = static_cast<unsigned char>(c);
    if (!std::isalnum(u) && c != '.' && c != '_' && c != '-') {
      return fmt::format("\"{}\" has a character other than a-z, A-Z, 0-9, '.', '_' and '-'",
                         util::SanitizeText(topic, 128));
    }
  }
  return "";
}

SinkFactory KafkaSinkFactory() {
  SinkFactory f;
  f.info.type = "kafka";
  f.info.kind = PluginKind::kSink;
  f.info.summary =
      "Produces events to Kafka with an idempotent producer (acks=all); a batch is delivered "
      "when every record's delivery report says so.";
  // One batch at a time (librdkafka batches and pipelines its records); the attempt's timeout
  // outlasts message_timeout, so a report, not the runner, says how a record fared.
  f.delivery = {.batch_size = "5000", .timeout = true, .default_timeout = "45s"};
  f.info.params = KafkaSinkSchema().Specs();
  f.create = [](const Params& p, PluginContext& ctx) -> Result<std::unique_ptr<Sink>> {
    SEEDANCE_ASSIGN_OR_RETURN(KafkaSinkOptions o, KafkaSinkSchema().Bind(p));
    SEEDANCE_ASSIGN_OR_RETURN(EventTemplate topic, EventTemplate::Parse(o.topic_text, "topic"));
    o.topic = std::move(topic);
    if (!o.key_text.empty()) {
      SEEDANCE_ASSIGN_OR_RETURN(EventTemplate key, EventTemplate::Parse(o.key_text, "key"));
      o.key = std::move(key);
    }
    std::string why;
    const KafkaLibrary* lib = LoadKafkaLibrary(&why);
    if (lib == nullptr) return InvalidArgumentError(p.Location("brokers") + ": " + why);
    // The properties are checked here: `validate` reports a wrong one.
    KafkaConfig conf(*lib);
    if (Status s = Configure(*lib, o, "seedance-" + ctx.name, conf); !s.ok()) {
      return InvalidArgumentError(p.Location("properties") + ": " + s.message());
    }
    return std::unique_ptr<Sink>(
        new KafkaSink(std::make_unique<KafkaProducer>(*lib, std::move(o), ctx)));
  };
  return f;
}

}  // namespace seedance::sinks
