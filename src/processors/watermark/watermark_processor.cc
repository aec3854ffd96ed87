#include "processors/watermark/watermark_processor.h"

#include <fmt/format.h>
#include <rapidjson/document.h>

#include "eventtime/event_time.h"
#include "eventtime/key_selector.h"
#include "eventtime/watermark_tracker.h"
#include "observe/metrics.h"
#include "seedance/options.h"
#include "seedance/plugin_context.h"
#include "util/strings.h"

namespace seedance::processors {
namespace {

using eventtime::WatermarkOptions;

struct WatermarkSettings {
  std::string time_field;
  eventtime::TimeFormat time_format = eventtime::TimeFormat::kAuto;
  bool require_time = false;
  WatermarkOptions options;  // from the four below
  WatermarkOptions::Scope per = WatermarkOptions::Scope::kStream;
  std::chrono::nanoseconds max_out_of_order{0};
  std::chrono::nanoseconds allowed_lateness{0};
  std::chrono::nanoseconds idle_timeout{0};
  std::chrono::nanoseconds max_future{0};  // 0: off
  std::chrono::nanoseconds state_ttl{0};   // per: key
  int64_t max_keys = 0;                    // per: key
  eventtime::KeySelector key;

  static const Options<WatermarkSettings>& Schema();

  static Result<WatermarkSettings> From(const Params& p) {
    SEEDANCE_ASSIGN_OR_RETURN(WatermarkSettings s, Schema().Bind(p));
    s.options.scope = s.per;
    s.options.max_out_of_order_ns = s.max_out_of_order.count();
    s.options.allowed_lateness_ns = s.allowed_lateness.count();
    s.options.idle_timeout_ns = s.idle_timeout.count();
    if (s.options.scope == WatermarkOptions::Scope::kKey && s.key.none()) {
      return Status(StatusCode::kInvalidArgument,
                    "per: key needs key_field or key_topic_level (" + p.Location("per") + ")");
    }
    if (s.require_time && s.time_field.empty()) {
      return Status(StatusCode::kInvalidArgument,
                    "require_time: true needs time_field (" + p.Location("require_time") + ")");
    }
    return s;
  }
};

std::string Seconds(int64_t ns) { return fmt::format("{:g} s", static_cast<double>(ns) / 1e9); }

class WatermarkProcessor final : public Processor {
 public:
  WatermarkProcessor(WatermarkSettings settings, PluginContext ctx)
      : settings_(std::move(settings)), tracker_(settings_.options), ctx_(std::move(ctx)) {
    watermark_gauge_ = &ctx_.metrics->GetFloatGauge(
        "seedance_watermark_seconds", "The stream's event-time watermark (Unix seconds).",
        {{"component", ctx_.name}});
    missing_time_ =
        &ctx_.metrics->GetCounter("seedance_event_time_fallbacks_total",
                                  "Events without a usable time field that took their ingest time.",
                                  {{"component", ctx_.name}});
    future_ = &ctx_.metrics->GetCounter(
        "seedance_event_time_future_total",
        "Events whose time was further ahead of the clock than max_future (sent to `error`).",
        {{"component", ctx_.name}});
    keys_refused_ = &ctx_.metrics->GetCounter(
        "seedance_watermark_keys_refused_total",
        "Events of a new key refused because max_keys keys were held (sent to `error`).",
        {{"component", ctx_.name}});
  }

  void Process(Event&& event, ProcessorOutput& out) override {
    const int64_t now = ctx_.now_ns();
    rapidjson::Document doc;
    const bool need_json = !settings_.time_field.empty() || !settings_.key.field.empty();
    const rapidjson::Value* payload = nullptr;
    if (need_json && event.format == PayloadFormat::kJson) {
      doc.Parse(event.payload.data(), event.payload.size());
      if (!doc.HasParseError()) payload = &doc;
    }
    if (!settings_.time_field.empty()) {
      const rapidjson::Value* v =
          payload == nullptr ? nullptr : eventtime::FindField(*payload, settings_.time_field);
      Result<int64_t> t = v == nullptr
                              ? Result<int64_t>(Status(StatusCode::kInvalidArgument, "missing"))
                              : eventtime::EventTimeFromJson(*v, settings_.time_format);
      if (t && settings_.max_future.count() > 0 && *t > now + settings_.max_future.count()) {
        // One event stamped in 2100 (a device whose clock reset, a hostile publisher) would
        // move the watermark there: every later event stale, every window closed, and the
        // watermark checkpointed so, across restarts.
        future_->Add();
        out.EmitSide(Output::kError, std::move(event),
                     fmt::format("event time {} is {} ahead of the clock (max_future {}): "
                                 "refused, it would make every later event stale",
                                 eventtime::FormatRfc3339(*t), Seconds(*t - now),
                                 Seconds(settings_.max_future.count())));
        return;
      }
      if (t) {
        event.event_time_ns = *t;
      } else if (settings_.require_time) {
        out.EmitSide(
            Output::kError, std::move(event),
            fmt::format("time field \"{}\": {}", settings_.time_field, t.error().message()));
        return;
      } else {
        event.event_time_ns = event.ingest_time_ns;
        missing_time_->Add();
      }
    }
    std::string scope;
    if (settings_.options.scope == WatermarkOptions::Scope::kSource) {
      scope = event.source;
    } else if (settings_.options.scope == WatermarkOptions::Scope::kKey) {
      Result<std::string> key = settings_.key.KeyOf(event, payload);
      if (!key) {
        out.EmitSide(Output::kError, std::move(event), key.error().message());
        return;
      }
      if (tracker_.scope_count() >= static_cast<size_t>(settings_.max_keys) &&
          !tracker_.HasScope(*key)) {
        // As in the window processor: a stream of new keys must not grow the state for ever.
        keys_refused_->Add();
        out.EmitSide(Output::kError, std::move(event),
                     fmt::format("max_keys ({}) reached: the event of a new key is refused, the "
                                 "keys held go on (key \"{}\")",
                                 settings_.max_keys, util::SanitizeText(*key, 64)));
        return;
      }
      scope = std::move(*key);
    }
    auto verdict = tracker_.Observe(scope, event.event_time_ns, now);
    if (verdict.stale) {
      event.SetHeader("lateness_ms", std::to_string(verdict.lateness_ns / 1'000'000));
      out.EmitSide(
          Output::kStale, std::move(event),
          fmt::format("event time {} is {} behind the watermark {} (allowed lateness {})",
                      eventtime::FormatRfc3339(event.event_time_ns), Seconds(verdict.lateness_ns),
                      eventtime::FormatRfc3339(verdict.watermark),
                      Seconds(settings_.options.allowed_lateness_ns)));
      return;
    }
    out.Emit(std::move(event));
    Announce(out);
  }

  void Tick(int64_t now_ns, ProcessorOutput& out) override {
    if (now_ns >= next_forget_ns_) {
      next_forget_ns_ = now_ns + 1'000'000'000;
      tracker_.ForgetIdleKeys(now_ns, settings_.state_ttl.count());
    }
    tracker_.Tick(now_ns);
    Announce(out);
  }

  bool stateful() const override { return true; }
  Status RestoreState(std::string_view key, std::string_view value) override {
    return tracker_.RestoreState(key, value, ctx_.now_ns());
  }
  void TakeChangedState(const StateSink& sink) override { tracker_.TakeChangedState(sink); }

  Status Reconfigure(const Params& params, bool apply) override {
    SEEDANCE_ASSIGN_OR_RETURN(WatermarkSettings s, WatermarkSettings::From(params));
    if (s.options.scope != settings_.options.scope || s.key.field != settings_.key.field ||
        s.key.topic_level != settings_.key.topic_level) {
      return Status(StatusCode::kInvalidArgument,
                    "per, key_field and key_topic_level cannot change without a restart");
    }
    if (!apply) return Status::Ok();
    settings_ = std::move(s);
    tracker_.set_options(settings_.options);
    return Status::Ok();
  }

 private:
  void Announce(ProcessorOutput& out) {
    tracker_.TakeAdvances(
        [&](std::string_view scope, int64_t watermark) { out.EmitWatermark(scope, watermark); });
    const int64_t w = tracker_.Watermark();
    if (w != eventtime::kNoWatermark) watermark_gauge_->Set(static_cast<double>(w) / 1e9);
  }

  WatermarkSettings settings_;
  eventtime::WatermarkTracker tracker_;
  PluginContext ctx_;
  observe::FloatGauge* watermark_gauge_;
  observe::Counter* missing_time_;
  observe::Counter* future_;
  observe::Counter* keys_refused_;
  int64_t next_forget_ns_ = 0;
};

}  // namespace

const Options<WatermarkSettings>& WatermarkSettings::Schema() {
  using S = WatermarkSettings;
  using Scope = WatermarkOptions::Scope;
  static const Options<S> o =
      Options<S>()
          .Add(&S::time_field,
               {.name = "time_field",
                .doc = "payload field holding the event time (dotted path); empty = ingest time"})
          .Enum(&S::time_format,
                {.name = "time_format",
                 .doc = "auto (numbers by magnitude, strings RFC 3339), s, ms, us, ns or rfc3339",
                 .default_value = "auto"},
                eventtime::TimeFormatChoices())
          .Add(&S::require_time,
               {.name = "require_time",
                .doc = "a missing or bad time sends the event to `error` (else: ingest time)",
                .default_value = "false"})
          .Enum(&S::per,
                {.name = "per",
                 .doc = "one watermark for the stream, per source, or per key",
                 .default_value = "stream"},
                {{"stream", Scope::kStream}, {"source", Scope::kSource}, {"key", Scope::kKey}})
          .Add(&S::max_out_of_order, {.name = "max_out_of_order",
                                      .doc = "watermark = max event time seen − this",
                                      .default_value = "5s"})
          .Add(&S::allowed_lateness, {.name = "allowed_lateness",
                                      .doc = "events older than watermark − this are stale",
                                      .default_value = "5m"})
          .Add(&S::max_future,
               {.name = "max_future",
                .doc = "an event time further ahead of the clock than this goes to `error` "
                       "instead of moving the watermark (0 = off)",
                .default_value = "10m"})
          .Add(&S::idle_timeout, {.name = "idle_timeout",
                                  .doc = "a scope silent this long advances with the wall clock",
                                  .default_value = "30s"})
          .Add(&S::state_ttl,
               {.name = "state_ttl",
                .doc = "per: key: a key with no event this long (wall clock) is forgotten "
                       "(match the window's)",
                .default_value = "1h"})
          .Int(&S::max_keys,
               {.name = "max_keys",
                .doc = "per: key: most keys held; past it a new key's events go to `error` (the "
                       "keys held go on)",
                .default_value = "100000",
                .validator = IntInRange(1)})
          .Include(&S::key, eventtime::KeySelectorSchema());
  return o;
}

ProcessorFactory WatermarkProcessorFactory() {
  ProcessorFactory f;
  f.info.type = "watermark";
  f.info.kind = PluginKind::kProcessor;
  f.info.summary =
      "Event time and watermarks; events later than the allowed lateness go to `stale`.";
  f.info.params = WatermarkSettings::Schema().Specs();
  f.create = [](const Params& p, PluginContext& ctx) -> Result<std::unique_ptr<Processor>> {
    SEEDANCE_ASSIGN_OR_RETURN(WatermarkSettings s, WatermarkSettings::From(p));
    return std::unique_ptr<Processor>(new WatermarkProcessor(std::move(s), ctx));
  };
  return f;
}

}  // namespace seedance::processors
