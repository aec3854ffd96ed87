#include "sources/mqtt/mqtt_source.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <sstream>
#include <unordered_set>
#include <variant>

#include "mqtt/client.h"
#include "mqtt/connection_params.h"
#include "mqtt/connection_status.h"
#include "mqtt/metadata_headers.h"
#include "observe/component_stats.h"
#include "observe/metrics.h"
#include "seedance/options.h"
#include "seedance/plugin_context.h"
#include "util/crc32c.h"
#include "util/event_loop.h"
#include "util/log.h"
#include "util/scratch_buffer.h"
#include "util/strings.h"
#include "util/topic_filter.h"

namespace seedance::sources {
namespace {

class MqttSource final : public Source, public Acknowledger {
 public:
  MqttSource(mqtt::ClientOptions options, PayloadFormat format, PluginContext ctx)
      : options_(std::move(options)), format_(format), ctx_(std::move(ctx)) {
    observe::Labels labels = {{"component", ctx_.name}};
    paused_ = &ctx_.metrics->GetCounter(
        "seedance_source_paused_total",
        "Times the source stopped reading because the pipeline was full.", labels);
    redelivered_ = &ctx_.metrics->GetCounter(
        "seedance_source_redeliveries_recognised_total",
        "Messages sent again by the broker whose effect was already committed (acknowledged, "
        "not processed again; pipelines with stateful processors).",
        labels);
  }

  Status Start(SourceOutput& output) override {
    output_ = &output;
    if (ctx_.redelivery != nullptr && ctx_.redelivery->active()) guard_ = ctx_.redelivery;
    SEEDANCE_RETURN_IF_ERROR(LoadSubscriptions());
    client_ = std::make_shared<mqtt::Client>(
        ctx_.loop->io(), options_,
        [this](mqtt::Publish& m, uint64_t token, std::string_view invalid) {
          return OnMessage(m, token, invalid);
        },
        [this](mqtt::ClientState s, const std::string& detail, bool news) {
          status_.OnState(s, detail, news);
          if (s == mqtt::ClientState::kConnected) CheckSession();
        });
    if (guard_ != nullptr) {
      client_->OnConfirmed(
          [this](const std::vector<uint16_t>& ids) { guard_->Confirmed(ctx_.name, ids); });
      if (options_.clean_start) {
        SEEDANCE_LOG_WARN(ctx_.name,
                          "feeds stateful processors without a persistent session "
                          "(persistent_session: false or qos: 0): messages in flight when the "
                          "process or the connection ends are not sent again, so windows "
                          "may miss them");
      }
    }
    client_->OnSubscriptionsSettled([this] { SaveSubscriptions(Filters()); });
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
    const bool guarded = token != 0 && guard_ != nullptr;
    if (guarded) {
      using Verdict = RedeliveryFilter::Verdict;
      std::weak_ptr<mqtt::Client> weak = client_;
      const Verdict v = guard_->Admit(ctx_.name, packet_id, m.dup, Fingerprint(m), [weak, token] {
        if (auto c = weak.lock()) c->Acknowledge(token);
      });
      if (v != Verdict::kNew) {
        // Its effect is committed (before a restart or a reconnect), or its first copy is
        // still in the pipeline and this one is acknowledged once that is committed.
        if (v == Verdict::kCommitted) client_->Acknowledge(token);
        ctx_.stats->Dropped("redelivered");
        redelivered_->Add();
        uint64_t suppressed = 0;
        if (limiter_.Allow("redelivered", &suppressed)) {
          SEEDANCE_LOG_INFO(ctx_.name,
                            "recognised a redelivered message whose effect is already {} "
                            "(packet {}); acknowledged, not processed again{}",
                            v == Verdict::kCommitted ? "committed" : "being committed", packet_id,
                            suppressed ? fmt::format(" ({} more since the last line)", suppressed)
                                       : std::string());
        }
        return true;
      }
    }
    // Copied into a pooled event: the client's packet keeps its storage for the next message.
    // A large payload is moved instead (swapped back if refused): a copy would double the
    // memory one large message takes, and the packet would keep its storage.
    Event e = output_->TakeEvent();
    e.source.assign(ctx_.name);
    e.topic.assign(m.topic);
    const bool moved = m.payload.size() > util::kScratchKeepBytes;
    if (moved) {
      e.payload.swap(m.payload);
    } else {
      e.payload.assign(m.payload);
    }
    e.format = format_;
    if (!m.props.empty() && mqtt::PropertiesToHeaders(m.props, &e) > 0) {
      uint64_t suppressed = 0;
      if (limiter_.Allow("user_properties", &suppressed)) {
        SEEDANCE_LOG_WARN(ctx_.name,
                          "a message on {} has more than {} user properties; the rest are not "
                          "kept as headers",
                          util::SanitizeText(m.topic, 128), mqtt::kMaxUserProperties);
      }
    }
    // A message read after the client's read linger is dated from the linger's start: it may
    // have waited that long in the socket buffer (and sinks' batch_linger counts from it, so
    // the two waits do not add up).
    e.ingest_time_ns = ctx_.now_ns() - client_->read_waited().count();
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
    // Refused: `m` is intact again; the client keeps it for redelivery.
    if (moved) e.payload.swap(m.payload);
    if (guarded) guard_->Withdraw(ctx_.name, packet_id);
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

  // A persistent session keeps its subscriptions at the broker across connections: the
  // filters it was given are kept in a state file, and those the configuration no longer names
  // (the topic changed by a reload, or before a restart) are unsubscribed when the broker
  // resumes the session. The file names them until the broker confirmed.
  //
  // What the file holds is unsubscribed on every resumed connection until the broker
  // confirmed, and a broker ends the connection on a malformed filter, on every connect, for as
  // long as the file says so: a line that is not a valid filter in UTF-8 is dropped, repeats
  // are sent once, and at most kMaxUnsubscribeBytes of filters are sent (the client splits them
  // into packets the broker accepts); the rest are forgotten (the broker keeps those
  // subscriptions until a clean_start session), with a warning either way.
  static constexpr size_t kMaxUnsubscribeBytes = 64 * 1024;
  Status LoadSubscriptions() {
    if (options_.clean_start || ctx_.state_files == nullptr) return Status::Ok();
    subscriptions_file_ = "mqtt/" + ctx_.name + ".subscriptions";
    Result<std::string> saved = ctx_.state_files->Read(subscriptions_file_);
    if (!saved && saved.error().code() != StatusCode::kNotFound) return saved.error();
    std::vector<std::string> known = Filters();
    std::unordered_set<std::string> seen(known.begin(), known.end());
    size_t bytes = 0, damaged = 0, over = 0;
    std::istringstream lines(saved ? *saved : std::string());
    for (std::string filter; std::getline(lines, filter);) {
      if (filter.empty() || seen.count(filter) != 0) continue;  // subscribed now, or a repeat
      if (!util::IsValidUtf8(filter) || !util::ValidateTopicFilter(filter).ok()) {
        ++damaged;
        continue;
      }
      if (bytes + filter.size() + 2 > kMaxUnsubscribeBytes) {  // 2: the filter's length field
        ++over;
        continue;
      }
      bytes += filter.size() + 2;
      seen.insert(filter);
      options_.unsubscribe.push_back(filter);
      known.push_back(filter);
    }
    if (damaged + over > 0) {
      SEEDANCE_LOG_WARN(ctx_.name,
                        "{}: {} line(s) that are not valid topic filters and {} filter(s) past "
                        "{} KiB are not unsubscribed; a session started with clean_start: true "
                        "drops every old subscription",
                        subscriptions_file_, damaged, over, kMaxUnsubscribeBytes / 1024);
    }
    SaveSubscriptions(known);
    return Status::Ok();
  }
  void SaveSubscriptions(const std::vector<std::string>& filters) {
    if (subscriptions_file_.empty()) return;
    std::string text;
    for (const std::string& f : filters) text += f + "\n";
    if (text == saved_subscriptions_) return;
    if (Status s = ctx_.state_files->Replace(subscriptions_file_, text); !s.ok()) {
      SEEDANCE_LOG_WARN(ctx_.name, "cannot save the session's subscriptions: {}", s.message());
      return;
    }
    saved_subscriptions_ = text;
  }
  std::vector<std::string> Filters() const {
    std::vector<std::string> filters;
    for (const auto& sub : options_.subscriptions) filters.push_back(sub.filter);
    return filters;
  }

  // CRC-32C of topic and payload, and the payload's length: tells a redelivery from a new
  // message that reuses the packet id.
  static uint64_t Fingerprint(const mqtt::Publish& m) {
    const uint64_t fp = (static_cast<uint64_t>(util::Crc32c(m.topic, m.payload)) << 32) |
                        static_cast<uint32_t>(m.payload.size());
    return fp == 0 ? 1 : fp;  // 0 stands for "any fingerprint" in restored old records
  }

  // A broker that answers with a new session although messages were committed and their
  // acknowledgements not confirmed has lost what was in flight then: it sends none of it again.
  void CheckSession() {
    if (guard_ == nullptr || options_.clean_start || client_->session_present()) return;
    if (!guard_->HasUnconfirmed(ctx_.name) && client_->connects() <= 1) return;
    SEEDANCE_LOG_WARN(ctx_.name,
                      "the broker has no session for client id \"{}\" (it expired, the broker "
                      "lost it, or another client took the id): messages it had in flight for "
                      "us are not sent again, and windows may miss them",
                      options_.client_id);
  }

  mqtt::ClientOptions options_;
  PayloadFormat format_;
  PluginContext ctx_;
  SourceOutput* output_ = nullptr;
  RedeliveryFilter* guard_ = nullptr;  // set when the pipeline keeps state
  std::shared_ptr<mqtt::Client> client_;
  std::string subscriptions_file_;   // in ctx_.state_files; empty without a persistent session
  std::string saved_subscriptions_;  // its content as last written
  mqtt::ConnectionStatus status_{
      *ctx_.metrics, {{"component", ctx_.name}, {"kind", "source"}}, ctx_.name, ctx_.stats->errors};
  observe::Counter* paused_;
  observe::Counter* redelivered_;
  util::LogLimiter limiter_{std::chrono::seconds(30)};
};

Status ValidateFilters(const ParamValue& v) {
  const auto& list = std::get<std::vector<std::string>>(v);
  if (list.empty()) return InvalidArgumentError("needs at least one topic filter");
  for (const auto& f : list) SEEDANCE_RETURN_IF_ERROR(util::ValidateTopicFilter(f));
  return Status::Ok();
}

struct MqttSourceSettings {
  mqtt::ConnectionSettings connection;
  std::vector<std::string> topic;
  int qos = 1;
  uint16_t receive_maximum = 1024;
  PayloadFormat format = PayloadFormat::kJson;
  // 15 ms: at 1k msg/s a read then takes in its 14 messages (ReadPacer::kBatch): fewer wake-ups
  // per event for some latency at low rates; 2k msg/s and more (7 ms and less) do not reach
  // it. The measurements: docs/bench.md, "Tuning record".
  std::chrono::microseconds read_linger{15000};
};

const Options<MqttSourceSettings>& MqttSourceSchema() {
  using S = MqttSourceSettings;
  static const Options<S> o =
      Options<S>()
          .Include(&S::connection,
                   mqtt::ConnectionSchema(
                       "client identifier; default seedance-<hostname>-<hash of "
                       "queue.data_dir>-<component name>: stable across restarts, unique per "
                       "host and data directory"))
          .Add(&S::topic,
               {.name = "topic",
                .doc = "topic filter or list of filters; + and # wildcards, $share/group/ allowed",
                .required = true,
                .validator = ValidateFilters})
          .Int(&S::qos, {.name = "qos",
                         .doc = "subscription QoS: 0, 1 or 2",
                         .default_value = "1",
                         .validator = IntInRange(0, 2, "must be 0, 1 or 2")})
          .Int(&S::receive_maximum,
               {.name = "receive_maximum",
                .doc = "MQTT 5: unacknowledged QoS 1/2 messages the broker may send",
                .default_value = "1024",
                .validator = IntInRange(1, 65535)})
          .Enum(
              &S::format,
              {.name = "format",
               .doc = "payload format: json (checked; invalid ones go to the error output) or raw",
               .default_value = "json"},
              {{"json", PayloadFormat::kJson}, {"raw", PayloadFormat::kRaw}})
          .Add(&S::read_linger,
               {.name = "read_linger",
                .doc = "after a read that did not fill the buffer, wait before the next, so "
                       "messages arriving meanwhile are taken in as one batch (one wake-up per "
                       "batch, not per message): about 14 messages' time at the recent rate, "
                       "at least 2 ms, at most this; not while 20 or more QoS 1/2 messages are "
                       "unacknowledged. 0 = read at once",
                .default_value = "15ms",
                .validator = [](const ParamValue& v) {
                  const auto d = std::get<std::chrono::nanoseconds>(v);
                  if (d >= std::chrono::nanoseconds(0) && d <= std::chrono::seconds(1))
                    return Status::Ok();
                  return InvalidArgumentError("must be 0 to 1s");
                }});
  return o;
}

}  // namespace

SourceFactory MqttSourceFactory() {
  SourceFactory f;
  f.info.type = "mqtt";
  f.info.kind = PluginKind::kSource;
  f.info.summary = "Subscribes to MQTT topics (3.1.1 or 5, QoS 0/1/2, TLS) on a broker.";
  f.info.params = MqttSourceSchema().Specs();
  f.create = [](const Params& p, PluginContext& ctx) -> Result<std::unique_ptr<Source>> {
    SEEDANCE_ASSIGN_OR_RETURN(MqttSourceSettings s, MqttSourceSchema().Bind(p));
    SEEDANCE_ASSIGN_OR_RETURN(
        mqtt::ClientOptions o,
        mqtt::ToClientOptions(s.connection, p, "seedance-" + ctx.instance + "-" + ctx.name, s.qos));
    o.receive_maximum = s.receive_maximum;
    o.read_linger = s.read_linger;
    for (const auto& filter : s.topic)
      o.subscriptions.push_back({filter, static_cast<uint8_t>(s.qos)});
    o.log_name = ctx.name;
    return std::unique_ptr<Source>(new MqttSource(std::move(o), s.format, ctx));
  };
  return f;
}

}  // namespace seedance::sources
