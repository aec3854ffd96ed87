#include "sources/mqtt/mqtt_source.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <variant>

#include "core/plugin_context.h"
#include "core/redelivery_guard.h"
#include "mqtt/client.h"
#include "mqtt/topic.h"
#include "sources/mqtt/mqtt_uri.h"
#include "storage/crc32c.h"
#include "util/log.h"
#include "util/tls_files.h"

namespace seedance::sources {
namespace {

// MQTT's keep-alive is a 16-bit count of seconds: 0 (off) or 1..65535 whole seconds. (It was
// cast: 65536s and 0.4s turned keep-alive off, 70000s became 4,464 s.)
Status KeepAliveSeconds(const ParamValue& v) {
  const auto* d = std::get_if<std::chrono::nanoseconds>(&v);
  if (d == nullptr) return Status::Ok();
  if (d->count() % 1'000'000'000 != 0 || *d > std::chrono::seconds(65535)) {
    return InvalidArgumentError("must be 0 (off) or whole seconds from 1s to 65535s");
  }
  return Status::Ok();
}

class MqttSource final : public Source, public Acknowledger {
 public:
  MqttSource(mqtt::ClientOptions options, PayloadFormat format, PluginContext ctx)
      : options_(std::move(options)), format_(format), ctx_(std::move(ctx)) {
    observe::Labels labels = {{"component", ctx_.name}};
    connected_ = &ctx_.metrics->GetGauge("seedance_mqtt_connected",
                                         "1 while the MQTT session is connected.", labels);
    connects_ =
        &ctx_.metrics->GetCounter("seedance_mqtt_connects_total",
                                  "Successful MQTT connections (reconnects included).", labels);
    paused_ = &ctx_.metrics->GetCounter(
        "seedance_source_paused_total",
        "Times the source stopped reading because the pipeline was full.", labels);
  }

  Status Start(SourceOutput& output) override {
    output_ = &output;
    client_ = std::make_shared<mqtt::Client>(
        ctx_.loop->io(), options_,
        [this](mqtt::Publish& m, uint64_t token, std::string_view invalid) {
          return OnMessage(m, token, invalid);
        },
        [this](mqtt::ClientState s, const std::string& detail, bool news) {
          OnState(s, detail, news);
        });
    client_->Start();
    return Status::Ok();
  }

  void Stop() override {
    if (client_) client_->Stop();
  }
  void Close() override {
    if (client_) client_->Close();
  }

  void Acknowledge(uint64_t token) override { client_->Acknowledge(token); }

 private:
  bool OnMessage(mqtt::Publish& m, uint64_t token, std::string_view invalid) {
    const auto packet_id = static_cast<uint16_t>(token & 0xFFFF);
    if (token != 0 && ctx_.redelivery != nullptr &&
        ctx_.redelivery->Skip(ctx_.name, packet_id, m.dup)) {
      // Committed before a restart; its PUBACK was lost with the old process.
      client_->Acknowledge(token);
      ctx_.stats->Dropped("redelivered");
      uint64_t suppressed = 0;
      if (limiter_.Allow("redelivered", &suppressed)) {
        SEEDANCE_LOG_INFO(ctx_.name,
                          "acknowledged a redelivered message already committed before the "
                          "restart (packet {}); not processed again",
                          packet_id);
      }
      return true;
    }
    // Copied into a pooled event: the client's packet keeps its storage for the next message.
    Event e = output_->TakeEvent();
    e.source.assign(ctx_.name);
    e.topic.assign(m.topic);
    e.payload.assign(m.payload);
    e.format = format_;
    e.ingest_time_ns = ctx_.now_ns();
    e.event_time_ns = e.ingest_time_ns;
    AckHandle ack{token ? this : nullptr, token, token ? packet_id + 1u : 0u};
    if (!invalid.empty()) {
      // Cannot be taken: an `error` event with what is known (topic, packet, reason), made
      // safe and acknowledged like any other, so the broker does not send it again.
      e.format = PayloadFormat::kRaw;
      e.SetHeader("mqtt_packet_id", std::to_string(m.packet_id));
      if (output_->TryEmitInvalid(e, ack, invalid)) {
        ctx_.stats->errors.Add();
        ctx_.stats->Dropped("invalid_message");
        return true;
      }
    } else if (output_->TryEmit(e, ack)) {
      ctx_.stats->events_in.Add();
      ctx_.stats->events_out.Add();
      return true;
    }
    // Refused: `m` is still intact; the client keeps it for redelivery.
    paused_->Add();
    uint64_t suppressed = 0;
    if (limiter_.Allow("paused", &suppressed)) {
      SEEDANCE_LOG_WARN(ctx_.name, "pipeline full: pausing reads from the broker (backpressure)");
    }
    std::weak_ptr<mqtt::Client> weak = client_;
    output_->WhenWritable([weak] {
      if (auto c = weak.lock()) c->Resume();
    });
    return false;
  }

  void OnState(mqtt::ClientState s, const std::string& detail, bool news) {
    connected_->Set(s == mqtt::ClientState::kConnected ? 1 : 0);
    switch (s) {
      case mqtt::ClientState::kConnected:
        connects_->Add();
        if (news) SEEDANCE_LOG_INFO(ctx_.name, "connected to {}", detail);
        break;
      case mqtt::ClientState::kDisconnected:
        ctx_.stats->errors.Add();
        if (news) SEEDANCE_LOG_WARN(ctx_.name, "{}; retrying with backoff", detail);
        break;
      case mqtt::ClientState::kConnecting:
      case mqtt::ClientState::kStopped:
        SEEDANCE_LOG_DEBUG(ctx_.name, "{} {}", mqtt::ClientStateName(s), detail);
        break;
    }
  }

  mqtt::ClientOptions options_;
  PayloadFormat format_;
  PluginContext ctx_;
  SourceOutput* output_ = nullptr;
  std::shared_ptr<mqtt::Client> client_;
  observe::Gauge* connected_;
  observe::Counter* connects_;
  observe::Counter* paused_;
  util::LogLimiter limiter_{std::chrono::seconds(30)};
};

Status ValidateUri(const ParamValue& v) {
  return ParseBrokerUri(std::get<std::string>(v)).status();
}

Status ValidateFilters(const ParamValue& v) {
  const auto& list = std::get<std::vector<std::string>>(v);
  if (list.empty()) return InvalidArgumentError("needs at least one topic filter");
  for (const auto& f : list) SEEDANCE_RETURN_IF_ERROR(mqtt::ValidateTopicFilter(f));
  return Status::Ok();
}

// seedance-<hostname>-<8 hex digits of the data directory>-<component>: the same across
// restarts (a persistent session is found again), different for two jobs on one host (one
// process per data directory), which would otherwise take each other's session over forever.
std::string DefaultClientId(const PluginContext& ctx) {
  char host[65] = {0};
  gethostname(host, sizeof host - 1);
  const uint32_t dir = storage::Crc32c(ctx.data_dir);
  return fmt::format("seedance-{}-{:08x}-{}", host, dir, ctx.name);
}

}  // namespace

SourceFactory MqttSourceFactory() {
  SourceFactory f;
  f.info.type = "mqtt";
  f.info.kind = PluginKind::kSource;
  f.info.summary = "Subscribes to MQTT topics (3.1.1 or 5, QoS 0/1/2, TLS) on a broker.";
  f.info.params = {
      {.name = "uri",
       .type = ParamType::kString,
       .doc = "broker address: tcp://host:1883 or ssl://host:8883",
       .required = true,
       .validator = ValidateUri},
      {.name = "topic",
       .type = ParamType::kStringList,
       .doc = "topic filter or list of filters; + and # wildcards, $share/group/ allowed",
       .required = true,
       .validator = ValidateFilters},
      {.name = "qos",
       .type = ParamType::kInt,
       .doc = "subscription QoS: 0, 1 or 2",
       .default_value = "1",
       .validator = IntInRange(0, 2, "must be 0, 1 or 2")},
      {.name = "protocol",
       .type = ParamType::kString,
       .doc = "MQTT protocol version",
       .default_value = "5",
       .allowed = {"5", "3.1.1"}},
      {.name = "client_id",
       .type = ParamType::kString,
       .doc = "client identifier; default seedance-<hostname>-<hash of queue.data_dir>-<component "
              "name>: stable across restarts, unique per host and data directory"},
      {.name = "username", .type = ParamType::kString, .doc = "user name for the broker"},
      {.name = "password", .type = ParamType::kString, .doc = "password (use ${ENV_VAR})"},
      {.name = "persistent_session",
       .type = ParamType::kBool,
       .doc = "keep the session (and queued QoS 1/2 messages) on the broker across restarts; "
              "default true when qos is 1 or 2, false for qos 0"},
      {.name = "session_expiry",
       .type = ParamType::kDuration,
       .doc = "MQTT 5: how long the broker keeps a persistent session",
       .default_value = "1h"},
      {.name = "keep_alive",
       .type = ParamType::kDuration,
       .doc = "MQTT keep-alive interval: 0 (off) or whole seconds up to 65535s",
       .default_value = "30s",
       .validator = KeepAliveSeconds},
      {.name = "receive_maximum",
       .type = ParamType::kInt,
       .doc = "MQTT 5: unacknowledged QoS 1/2 messages the broker may send",
       .default_value = "1024",
       .validator = IntInRange(1, 65535)},
      {.name = "format",
       .type = ParamType::kString,
       .doc = "payload format: json (checked; invalid ones go to the error output) or raw",
       .default_value = "json",
       .allowed = {"json", "raw"}},
      {.name = "connect_timeout",
       .type = ParamType::kDuration,
       .doc = "limit for TCP connect, TLS handshake and CONNACK",
       .default_value = "10s"},
      {.name = "reconnect_min",
       .type = ParamType::kDuration,
       .doc = "first reconnect delay (doubles up to reconnect_max)",
       .default_value = "200ms"},
      {.name = "reconnect_max",
       .type = ParamType::kDuration,
       .doc = "longest reconnect delay",
       .default_value = "30s"},
      {.name = "max_packet_size",
       .type = ParamType::kSize,
       .doc = "largest packet accepted from the broker",
       .default_value = "16MiB"},
      {.name = "tls",
       .type = ParamType::kObject,
       .doc = "TLS settings (ssl:// URIs)",
       .fields =
           {
               {.name = "ca_file",
                .type = ParamType::kString,
                .doc = "PEM file of CAs to verify the broker; system CAs when unset",
                .validator = util::CheckReadableFile},
               {.name = "cert_file",
                .type = ParamType::kString,
                .doc = "client certificate (PEM)",
                .validator = util::CheckReadableFile},
               {.name = "key_file",
                .type = ParamType::kString,
                .doc = "client private key (PEM)",
                .validator = util::CheckReadableFile},
               {.name = "verify",
                .type = ParamType::kBool,
                .doc = "verify the broker's certificate and name",
                .default_value = "true"},
               {.name = "server_name",
                .type = ParamType::kString,
                .doc = "name to verify and send as SNI; the URI's host when unset"},
           }},
  };
  f.create = [](const Params& p, PluginContext& ctx) -> Result<std::unique_ptr<Source>> {
    SEEDANCE_ASSIGN_OR_RETURN(BrokerAddress addr, ParseBrokerUri(p.GetString("uri")));
    mqtt::ClientOptions o;
    o.host = addr.host;
    o.port = addr.port;
    o.tls.enabled = addr.tls;
    const Params& tls = p.GetObject("tls");
    o.tls.ca_file = tls.GetString("ca_file");
    o.tls.cert_file = tls.GetString("cert_file");
    o.tls.key_file = tls.GetString("key_file");
    o.tls.verify = tls.Has("verify") ? tls.GetBool("verify") : true;
    o.tls.server_name = tls.GetString("server_name");
    if (o.tls.cert_file.empty() != o.tls.key_file.empty()) {
      return InvalidArgumentError(p.Location("tls") +
                                  ": tls.cert_file and tls.key_file go together");
    }
    if (o.tls.enabled) {
      // Load the files once now, so `validate` and start-up refuse what every connection
      // attempt would (the client loads them again when it connects).
      boost::asio::ssl::context probe(boost::asio::ssl::context::tls_client);
      Status s = util::LoadCaFile(probe, o.tls.ca_file);
      if (s.ok() && !o.tls.cert_file.empty()) {
        s = util::LoadClientCertificate(probe, o.tls.cert_file, o.tls.key_file);
      }
      if (!s.ok()) return InvalidArgumentError(p.Location("tls") + ": " + s.message());
    }
    o.version = p.GetString("protocol") == "3.1.1" ? mqtt::Version::kV311 : mqtt::Version::kV5;
    o.client_id = p.Has("client_id") ? p.GetString("client_id") : DefaultClientId(ctx);
    if (p.Has("username")) o.username = p.GetString("username");
    if (p.Has("password")) o.password = p.GetString("password");
    // QoS 1/2 promise no loss: a clean session would drop what the broker queued while
    // Seedance restarted.
    const bool persistent =
        p.Has("persistent_session") ? p.GetBool("persistent_session") : p.GetInt("qos") >= 1;
    o.clean_start = !persistent;
    o.session_expiry_s =
        persistent ? static_cast<uint32_t>(std::chrono::duration_cast<std::chrono::seconds>(
                                               p.GetDuration("session_expiry"))
                                               .count())
                   : 0;
    o.keep_alive_s = static_cast<uint16_t>(
        std::chrono::duration_cast<std::chrono::seconds>(p.GetDuration("keep_alive")).count());
    o.receive_maximum = static_cast<uint16_t>(p.GetInt("receive_maximum"));
    for (const auto& filter : p.GetStringList("topic")) {
      o.subscriptions.push_back({filter, static_cast<uint8_t>(p.GetInt("qos"))});
    }
    o.connect_timeout =
        std::chrono::duration_cast<std::chrono::milliseconds>(p.GetDuration("connect_timeout"));
    o.reconnect_min =
        std::chrono::duration_cast<std::chrono::milliseconds>(p.GetDuration("reconnect_min"));
    o.reconnect_max =
        std::chrono::duration_cast<std::chrono::milliseconds>(p.GetDuration("reconnect_max"));
    o.max_packet_size = p.GetSize("max_packet_size");
    o.log_name = ctx.name;
    PayloadFormat format =
        p.GetString("format") == "raw" ? PayloadFormat::kRaw : PayloadFormat::kJson;
    return std::unique_ptr<Source>(new MqttSource(std::move(o), format, ctx));
  };
  return f;
}

}  // namespace seedance::sources
