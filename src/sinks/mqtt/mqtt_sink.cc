#include "sinks/mqtt/mqtt_sink.h"

#include <fmt/format.h>

#include <memory>
#include <unordered_map>

#include "mqtt/client.h"
#include "mqtt/connection_params.h"
#include "mqtt/connection_status.h"
#include "mqtt/metadata_headers.h"
#include "mqtt/reason_codes.h"
#include "observe/component_stats.h"
#include "observe/metrics.h"
#include "seedance/options.h"
#include "seedance/plugin_context.h"
#include "seedance/sink.h"
#include "sinks/mqtt/topic_template.h"
#include "util/event_loop.h"

namespace seedance::sinks {
namespace {

// A message's tag: the attempt id and the event's index in the batch.
constexpr int kIndexBits = 20;
constexpr size_t kMaxBatchEvents = size_t{1} << kIndexBits;

struct MqttSinkOptions {
  mqtt::ClientOptions client;
  TopicTemplate topic;
  uint8_t qos = 1;
  bool retain = false;
  std::string content_type;
  uint32_t message_expiry_s = 0;
  std::vector<std::string> user_property_headers;  // "*": every header
  bool relay_metadata = true;
};

class MqttSink final : public Sink {
 public:
  MqttSink(MqttSinkOptions o, PluginContext ctx) : o_(std::move(o)), ctx_(std::move(ctx)) {}

  Status Start() override {
    client_ = std::make_shared<mqtt::Client>(
        ctx_.loop->io(), o_.client,
        [](mqtt::Publish&, uint64_t, std::string_view) { return true; },  // subscribes to nothing
        [this](mqtt::ClientState s, const std::string& detail, bool news) {
          status_.OnState(s, detail, news);
        });
    client_->OnPublished([this](const mqtt::OutboundSession::Completion& c) { OnPublished(c); });
    client_->Start();
    return Status::Ok();
  }

  void Attempt(uint64_t id, const Batch& batch, AttemptCallback done) override {
    if (stopped_) return done(AttemptOutcome::Shutdown());
    if (client_->state() != mqtt::ClientState::kConnected) {
      const std::string& why = client_->last_error();
      return done(AttemptOutcome::Retry(fmt::format("not connected to {}:{}{}{}", o_.client.host,
                                                    o_.client.port, why.empty() ? "" : ": ", why)));
    }
    Pending& p = pending_[id];  // references to map elements survive rehashing
    p.done = std::move(done);
    p.outstanding = 1;  // until every event is handed over: QoS 0 ones complete at once
    std::string topic, why;
    for (size_t i = 0; i < batch.events.size(); ++i) {
      const Event& e = batch.events[i];
      if (!o_.topic.Render(e, &topic, &why)) {
        p.outcome.rejected.push_back(RejectedEvent{i, why});
        continue;
      }
      ++p.outstanding;
      client_->PublishMessage(MakeMessage(e, topic), (id << kIndexBits) | i);
    }
    --p.outstanding;
    MaybeFinish(id);
  }

  void Abort(uint64_t id) override {
    auto it = pending_.find(id);
    if (it == pending_.end()) return;
    AttemptCallback done = std::move(it->second.done);
    pending_.erase(it);
    // The queued ones are dropped; those in flight finish their exchange, unreported (the
    // client ends a connection whose answers do not come: ack_timeout). The retry repeats
    // them: at least once.
    client_->CancelPublishes(id << kIndexBits, (id << kIndexBits) | (kMaxBatchEvents - 1));
    done(AttemptOutcome::Retry("not every message acknowledged within the timeout"));
  }

  size_t MaxBatchEvents() const override { return kMaxBatchEvents; }

  void Stop() override {
    stopped_ = true;
    auto pending = std::move(pending_);
    pending_.clear();
    for (auto& [id, p] : pending) p.done(AttemptOutcome::Shutdown());
    if (client_) {
      client_->Stop();
      client_->Close();
    }
  }

 private:
  struct Pending {
    size_t outstanding = 0;
    bool quota_exceeded = false;
    AttemptOutcome outcome;
    AttemptCallback done;
  };

  mqtt::Publish MakeMessage(const Event& e, const std::string& topic) const {
    mqtt::Publish m{.topic = topic, .payload = e.payload, .qos = o_.qos, .retain = o_.retain};
    if (o_.client.version != mqtt::Version::kV5) return m;
    // The sink's own settings first; then what the event carries (mqtt_* headers: a relay
    // keeps the metadata of the message it relays).
    if (o_.message_expiry_s > 0) {
      m.props.push_back({.id = mqtt::prop::kMessageExpiry, .number = o_.message_expiry_s});
    }
    if (!o_.content_type.empty()) {
      m.props.push_back({.id = mqtt::prop::kContentType, .text = o_.content_type});
    }
    if (o_.relay_metadata) mqtt::HeadersToProperties(e, &m.props);
    if (e.format == PayloadFormat::kJson &&
        mqtt::FindProperty(m.props, mqtt::prop::kPayloadFormat) == nullptr) {
      m.props.push_back({.id = mqtt::prop::kPayloadFormat, .number = 1});  // UTF-8 text
    }
    for (const std::string& name : o_.user_property_headers) {
      if (name == "*") {
        for (const Header& h : e.headers) {
          if (h.name.starts_with("mqtt_")) continue;  // metadata, relayed as what it is
          if (o_.relay_metadata && mqtt::IsTraceContextHeader(h.name)) continue;  // relayed
          m.props.push_back({.id = mqtt::prop::kUserProperty, .text = h.name, .value = h.value});
        }
      } else if (o_.relay_metadata && mqtt::IsTraceContextHeader(name)) {
        continue;  // relayed with the metadata
      } else if (const std::string* v = e.FindHeader(name)) {
        m.props.push_back({.id = mqtt::prop::kUserProperty, .text = name, .value = *v});
      }
    }
    return m;
  }

  void OnPublished(const mqtt::OutboundSession::Completion& c) {
    const uint64_t id = c.tag >> kIndexBits;
    auto it = pending_.find(id);
    if (it == pending_.end()) return;  // aborted
    Pending& p = it->second;
    if (c.reason == 0x97) {
      p.quota_exceeded = true;
    } else if (c.reason >= 0x80) {
      p.outcome.rejected.push_back(
          RejectedEvent{static_cast<size_t>(c.tag & (kMaxBatchEvents - 1)),
                        fmt::format("broker refused the message (0x{:02x} {}{}{})", c.reason,
                                    mqtt::PublishReasonText(c.reason),
                                    c.reason_text.empty() ? "" : ": ", c.reason_text)});
    }
    --p.outstanding;
    MaybeFinish(id);
  }

  void MaybeFinish(uint64_t id) {
    auto it = pending_.find(id);
    if (it == pending_.end() || it->second.outstanding > 0) return;
    Pending p = std::move(it->second);
    pending_.erase(it);
    if (p.quota_exceeded) {
      return p.done(AttemptOutcome::Retry("broker's quota exceeded (0x97)", {},
                                          /*backpressure=*/true));
    }
    p.done(std::move(p.outcome));
  }

  MqttSinkOptions o_;
  PluginContext ctx_;
  std::shared_ptr<mqtt::Client> client_;
  std::unordered_map<uint64_t, Pending> pending_;  // by attempt id
  bool stopped_ = false;
  mqtt::ConnectionStatus status_{
      *ctx_.metrics, {{"component", ctx_.name}, {"kind", "sink"}}, ctx_.name, ctx_.stats->errors};
};

// The in-flight window when the config does not set one. QoS 1: brokers acknowledge as they
// take messages in, and a window of 20 left the sink waiting for round trips (bench/run
// mqtt_relay: 0.66-0.86 of the ceiling at 20, 0.90-0.95 at 100); 100 is what AWS IoT allows a
// connection. QoS 2: mosquitto disconnects a client with more than its max_inflight_messages
// (20 by default) unfinished, and an MQTT 3.1.1 broker has no way to say so beforehand.
uint32_t DefaultMaxInFlight(uint8_t qos) { return qos == 2 ? 20 : 100; }

Status ValidateTopicTemplate(const ParamValue& v) {
  return TopicTemplate::Parse(std::get<std::string>(v)).status();
}

struct MqttSinkSettings {
  mqtt::ConnectionSettings connection;
  std::string topic;
  uint8_t qos = 1;
  uint32_t max_in_flight = 0;  // unset: by QoS (DefaultMaxInFlight)
  bool retain = false;
  std::string content_type;
  std::optional<std::chrono::seconds> message_expiry;
  std::vector<std::string> user_properties;
  bool relay_metadata = true;
};

const Options<MqttSinkSettings>& MqttSinkSchema() {
  using S = MqttSinkSettings;
  static const Options<S> o =
      Options<S>()
          .Include(&S::connection,
                   mqtt::ConnectionSchema(
                       "client identifier; default seedance-<hostname>-<hash of "
                       "queue.data_dir>-<component name>-out: stable across restarts, unique "
                       "per host and data directory"))
          .Add(&S::topic, {.name = "topic",
                           .doc = "topic name, with placeholders {topic}, {topic.N} (level N "
                                  "from 1), {payload.FIELD.SUBFIELD}, {header.NAME}",
                           .required = true,
                           .validator = ValidateTopicTemplate})
          .Int(&S::qos, {.name = "qos",
                         .doc = "QoS of the messages: 0, 1 or 2; delivered means PUBACK (1) or "
                                "PUBCOMP (2)",
                         .default_value = "1",
                         .validator = IntInRange(0, 2, "must be 0, 1 or 2")})
          .Int(&S::max_in_flight,
               {.name = "max_in_flight",
                .doc = "QoS 1/2 messages sent and not yet acknowledged, at most; default 100 "
                       "at QoS 1 (AWS IoT's limit), 20 at QoS 2 (mosquitto's: MQTT 3.1.1 cannot "
                       "say, and mosquitto drops a client that sends more); an MQTT 5 broker's "
                       "Receive Maximum lowers it",
                .validator = IntInRange(1, 65535)})
          .Add(&S::retain,
               {.name = "retain", .doc = "publish with the retain flag", .default_value = "false"})
          .Add(&S::content_type,
               {.name = "content_type",
                .doc = "MQTT 5 content type of every message, e.g. application/json"})
          .Add(&S::message_expiry,
               {.name = "message_expiry",
                .doc = "MQTT 5 message expiry interval (whole seconds); none when unset"})
          .Add(&S::user_properties,
               {.name = "user_properties",
                .doc = "MQTT 5: event headers sent as user properties, by name; \"*\" for every "
                       "header but the mqtt_* ones"})
          .Add(&S::relay_metadata,
               {.name = "relay_metadata",
                .doc = "MQTT 5: send the metadata an event came in with (its mqtt_* headers: "
                       "user properties, content type, expiry, response topic, correlation "
                       "data)",
                .default_value = "true"});
  return o;
}

}  // namespace

SinkFactory MqttSinkFactory() {
  SinkFactory f;
  f.info.type = "mqtt";
  f.info.kind = PluginKind::kSink;
  f.info.summary =
      "Publishes each event to an MQTT broker (3.1.1 or 5, QoS 0/1/2, TLS) on a templated topic.";
  f.delivery = {.concurrent = true, .timeout = true, .default_timeout = "10s"};
  f.info.params = MqttSinkSchema().Specs();
  f.create = [](const Params& p, PluginContext& ctx) -> Result<std::unique_ptr<Sink>> {
    SEEDANCE_ASSIGN_OR_RETURN(MqttSinkSettings s, MqttSinkSchema().Bind(p));
    MqttSinkOptions o;
    o.qos = s.qos;
    SEEDANCE_ASSIGN_OR_RETURN(
        o.client,
        mqtt::ToClientOptions(s.connection, p, "seedance-" + ctx.instance + "-" + ctx.name + "-out",
                              o.qos));
    o.client.log_name = ctx.name;
    o.client.max_publish_in_flight =
        s.max_in_flight != 0 ? s.max_in_flight : DefaultMaxInFlight(s.qos);
    // A message unanswered for an attempt's time costs the connection: the reconnect sends it
    // again, the only way MQTT allows.
    o.client.ack_timeout = ctx.attempt_timeout;
    SEEDANCE_ASSIGN_OR_RETURN(o.topic, TopicTemplate::Parse(s.topic));
    o.retain = s.retain;
    o.content_type = s.content_type;
    if (s.message_expiry) o.message_expiry_s = static_cast<uint32_t>(s.message_expiry->count());
    o.user_property_headers = s.user_properties;
    o.relay_metadata = s.relay_metadata;
    return std::unique_ptr<Sink>(new MqttSink(std::move(o), ctx));
  };
  return f;
}

}  // namespace seedance::sinks
