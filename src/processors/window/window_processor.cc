#include "processors/window/window_processor.h"

#include <fmt/format.h>
#include <rapidjson/document.h>

#include <algorithm>
#include <cmath>

#include "eventtime/event_time.h"
#include "eventtime/key_selector.h"
#include "eventtime/window_store.h"
#include "observe/metrics.h"
#include "seedance/options.h"
#include "seedance/plugin_context.h"
#include "util/strings.h"

namespace seedance::processors {
namespace {

struct Aggregate {
  std::string name;      // as configured: count, sum, min, max, avg, p95, ...
  double quantile = -1;  // for pNN
};

struct WindowSettings {
  eventtime::KeySelector key;
  std::string field;
  eventtime::WindowSpec spec;
  std::vector<Aggregate> aggregates;
  int64_t state_ttl_ns = 0;
  int64_t max_keys = 0;
  int64_t max_windows = 0;

  bool needs_value() const {
    for (const auto& a : aggregates) {
      if (a.name != "count") return true;
    }
    return false;
  }

  // The parameters as given (defaults applied).
  struct Given {
    std::chrono::nanoseconds size{0};
    std::chrono::nanoseconds slide{0};  // 0: tumbling
    std::string field;
    std::vector<std::string> aggregates;
    std::chrono::nanoseconds allowed_lateness{0};
    std::chrono::nanoseconds state_ttl{0};
    int64_t max_keys = 0;
    int64_t max_windows = 0;
    eventtime::KeySelector key;
  };
  static const Options<Given>& Schema();

  static Result<WindowSettings> From(const Params& p) {
    SEEDANCE_ASSIGN_OR_RETURN(Given g, Schema().Bind(p));
    WindowSettings s;
    s.key = g.key;
    s.field = g.field;
    s.spec.size_ns = g.size.count();
    s.spec.slide_ns = g.slide.count() > 0 ? g.slide.count() : s.spec.size_ns;
    s.spec.allowed_lateness_ns = g.allowed_lateness.count();
    s.state_ttl_ns = g.state_ttl.count();
    s.max_keys = g.max_keys;
    s.max_windows = g.max_windows;
    if (s.spec.size_ns <= 0) {
      return Status(StatusCode::kInvalidArgument,
                    "size must be above 0 (" + p.Location("size") + ")");
    }
    if (s.spec.slide_ns > s.spec.size_ns || s.spec.size_ns % s.spec.slide_ns != 0) {
      return Status(StatusCode::kInvalidArgument,
                    "slide must divide size (" + p.Location("slide") + ")");
    }
    if (s.spec.size_ns / s.spec.slide_ns > 1000) {
      return Status(StatusCode::kInvalidArgument,
                    "size / slide above 1000 windows per event (" + p.Location("slide") + ")");
    }
    // Without a field, the default aggregates come down to the count.
    const bool defaulted = p.IsDefaulted("aggregates");
    std::vector<std::string> names = g.aggregates;
    if (defaulted && s.field.empty()) names = {"count"};
    for (const auto& name : names) {
      Aggregate a{name};
      if (name.size() > 1 && name[0] == 'p') {
        char* end = nullptr;
        double pct = std::strtod(name.c_str() + 1, &end);
        if (*end != '\0' || !(pct > 0 && pct < 100)) {
          return Status(StatusCode::kInvalidArgument,
                        fmt::format("aggregate \"{}\": quantiles are p1..p99.9 ({})", name,
                                    p.Location("aggregates")));
        }
        a.quantile = pct / 100;
      } else if (name != "count" && name != "sum" && name != "min" && name != "max" &&
                 name != "avg") {
        return Status(StatusCode::kInvalidArgument,
                      fmt::format("aggregate \"{}\": expected count, sum, min, max, avg or pNN "
                                  "({})",
                                  name, p.Location("aggregates")));
      }
      s.aggregates.push_back(std::move(a));
    }
    if (s.needs_value() && s.field.empty()) {
      return Status(StatusCode::kInvalidArgument,
                    "aggregates other than count need `field` (" + p.Location("aggregates") + ")");
    }
    return s;
  }
};

void AppendNumber(std::string& out, double v) {
  if (std::isfinite(v)) {
    out += fmt::format("{}", v);
  } else {
    out += "null";
  }
}

class WindowProcessor final : public Processor {
 public:
  WindowProcessor(WindowSettings settings, PluginContext ctx)
      : settings_(std::move(settings)), store_(settings_.spec), ctx_(std::move(ctx)) {
    emitted_ = &ctx_.metrics->GetCounter("seedance_window_emissions_total",
                                         "Window results emitted (updates included).",
                                         {{"component", ctx_.name}});
    keys_gauge_ = &ctx_.metrics->GetGauge("seedance_window_keys", "Keys with open windows.",
                                          {{"component", ctx_.name}});
    windows_gauge_ = &ctx_.metrics->GetGauge(
        "seedance_window_open", "Windows in state (open, or fired and within lateness).",
        {{"component", ctx_.name}});
    keys_refused_ = &ctx_.metrics->GetCounter(
        "seedance_window_keys_refused_total",
        "Events of a new key refused because max_keys keys were open (sent to `error`).",
        {{"component", ctx_.name}});
    windows_refused_ = &ctx_.metrics->GetCounter(
        "seedance_window_windows_refused_total",
        "Events refused because they would open windows past max_windows (sent to `error`).",
        {{"component", ctx_.name}});
  }

  void Process(Event&& event, ProcessorOutput& out) override {
    rapidjson::Document doc;
    const rapidjson::Value* payload = nullptr;
    if ((!settings_.field.empty() || !settings_.key.field.empty()) &&
        event.format == PayloadFormat::kJson) {
      doc.Parse(event.payload.data(), event.payload.size());
      if (!doc.HasParseError()) payload = &doc;
    }
    Result<std::string> key = settings_.key.KeyOf(event, payload);
    if (!key) {
      out.EmitSide(Output::kError, std::move(event), key.error().message());
      return;
    }
    if (store_.key_count() >= static_cast<size_t>(settings_.max_keys) && !store_.HasKey(*key)) {
      // A stream of new keys (one per event, from a hostile or broken publisher) would grow
      // the state until the memory ran out: past max_keys a new key's event is refused; the
      // keys already open go on, and a key is forgotten after state_ttl without events.
      keys_refused_->Add();
      out.EmitSide(Output::kError, std::move(event),
                   fmt::format("max_keys ({}) reached: the event of a new key is refused, the "
                               "open keys go on (key \"{}\")",
                               settings_.max_keys, util::SanitizeText(*key, 64)));
      return;
    }
    double value = 0;
    bool has_value = false;
    if (!settings_.field.empty()) {
      const rapidjson::Value* v =
          payload == nullptr ? nullptr : eventtime::FindField(*payload, settings_.field);
      has_value = v != nullptr && v->IsNumber();
      if (has_value) value = v->GetDouble();
      if (!has_value && settings_.needs_value()) {
        out.EmitSide(Output::kError, std::move(event),
                     fmt::format("field \"{}\" is missing or not a number", settings_.field));
        return;
      }
    }
    if (!store_.Holds(event.event_time_ns)) {
      out.EmitSide(Output::kError, std::move(event),
                   fmt::format("event time {} is too near the ends of Unix nanoseconds (1678, "
                               "2262) for windows of this size and allowed_lateness",
                               eventtime::FormatRfc3339(event.event_time_ns)));
      return;
    }
    // max_keys alone does not bound the state: a key holds a window for every slide that its
    // events' times reach between the watermark less allowed_lateness and the newest time (with
    // 1 s windows and 5 min of lateness, times scattered over those 5 minutes held 300 windows
    // a key, 30 million at max_keys).
    // An event opens at most size / slide windows: below the cap by that much (the usual
    // case), the windows it would open need not be counted (a second walk of them per event).
    const size_t max_windows = static_cast<size_t>(settings_.max_windows);
    const size_t room = max_windows - std::min(max_windows, store_.window_count());
    const auto per_event = static_cast<size_t>(store_.spec().size_ns / store_.spec().slide_ns);
    const size_t opens = room >= per_event ? 0 : store_.WindowsToOpen(*key, event.event_time_ns);
    if (opens > room) {
      windows_refused_->Add();
      out.EmitSide(Output::kError, std::move(event),
                   fmt::format("max_windows ({}) reached: the event would open {} more "
                               "window(s) (key \"{}\", event time {}); the open windows go on",
                               settings_.max_windows, opens, util::SanitizeText(*key, 64),
                               eventtime::FormatRfc3339(event.event_time_ns)));
      return;
    }
    out_ = &out;
    const bool taken = store_.Add(*key, event.event_time_ns, value, has_value, ctx_.now_ns(),
                                  [this](const eventtime::WindowResult& r) { EmitResult(r); });
    if (!taken) {
      out.EmitSide(Output::kStale, std::move(event),
                   fmt::format("every window holding event time {} is closed (watermark passed "
                               "its end + allowed lateness)",
                               eventtime::FormatRfc3339(event.event_time_ns)));
    }
    UpdateGauges();
  }

  void OnWatermark(std::string_view scope, int64_t watermark_ns, ProcessorOutput& out) override {
    out_ = &out;
    store_.AdvanceWatermark(scope, watermark_ns,
                            [this](const eventtime::WindowResult& r) { EmitResult(r); });
    UpdateGauges();
    out.EmitWatermark(scope, watermark_ns);
  }

  void Tick(int64_t now_ns, ProcessorOutput& out) override {
    if (now_ns < next_expiry_ns_) return;
    next_expiry_ns_ = now_ns + 1'000'000'000;
    out_ = &out;
    store_.ExpireIdleKeys(now_ns, settings_.state_ttl_ns,
                          [this](const eventtime::WindowResult& r) { EmitResult(r); });
    if (pending_spec_) {  // a SIGHUP changed the windows: flush the old ones first
      store_.ExpireIdleKeys(now_ns, std::numeric_limits<int64_t>::min() / 2,
                            [this](const eventtime::WindowResult& r) { EmitResult(r); });
      store_.SetSpec(*pending_spec_);
      pending_spec_.reset();
    }
    UpdateGauges();
  }

  bool stateful() const override { return true; }
  Status RestoreState(std::string_view key, std::string_view value) override {
    return store_.RestoreState(key, value, ctx_.now_ns());
  }
  void TakeChangedState(const StateSink& sink) override { store_.TakeChangedState(sink); }

  Status Reconfigure(const Params& params, bool apply) override {
    SEEDANCE_ASSIGN_OR_RETURN(WindowSettings s, WindowSettings::From(params));
    if (s.key.field != settings_.key.field || s.key.topic_level != settings_.key.topic_level ||
        s.field != settings_.field) {
      return Status(StatusCode::kInvalidArgument,
                    "key_field, key_topic_level and field cannot change without a restart");
    }
    if (!apply) return Status::Ok();
    const eventtime::WindowSpec old = store_.spec();
    if (s.spec.size_ns != old.size_ns || s.spec.slide_ns != old.slide_ns) {
      pending_spec_ = s.spec;  // applied at the next tick, after flushing the open windows
      next_expiry_ns_ = 0;
    } else if (s.spec.allowed_lateness_ns != old.allowed_lateness_ns) {
      store_.SetSpec(s.spec);
    }
    settings_ = std::move(s);
    return Status::Ok();
  }

 private:
  void UpdateGauges() {
    keys_gauge_->Set(static_cast<int64_t>(store_.key_count()));
    windows_gauge_->Set(static_cast<int64_t>(store_.window_count()));
  }

  void EmitResult(const eventtime::WindowResult& r) {
    const eventtime::WindowAggregate& a = *r.aggregate;
    std::string payload = "{\"key\":";
    util::AppendJsonString(payload, r.key);
    payload +=
        fmt::format(",\"window_start\":\"{}\",\"window_end\":\"{}\",\"start_ms\":{},\"end_ms\":{}",
                    eventtime::FormatRfc3339(r.start_ns), eventtime::FormatRfc3339(r.end_ns),
                    r.start_ns / 1'000'000, r.end_ns / 1'000'000);
    bool count_written = false;
    for (const auto& agg : settings_.aggregates) {
      payload += ",\"" + agg.name + "\":";
      if (agg.name == "count") {
        payload += std::to_string(a.count);
        count_written = true;
      } else if (agg.name == "sum") {
        AppendNumber(payload, a.sum);
      } else if (agg.name == "min") {
        AppendNumber(payload, a.sketch.count() ? a.min : NAN);
      } else if (agg.name == "max") {
        AppendNumber(payload, a.sketch.count() ? a.max : NAN);
      } else if (agg.name == "avg") {
        AppendNumber(payload,
                     a.sketch.count() ? a.sum / static_cast<double>(a.sketch.count()) : NAN);
      } else {
        AppendNumber(payload, a.sketch.count() ? a.sketch.Quantile(agg.quantile) : NAN);
      }
    }
    if (!count_written) payload += fmt::format(",\"count\":{}", a.count);
    payload += fmt::format(",\"update\":{}}}", r.update);
    Event e;
    e.source = ctx_.name;
    e.topic = r.key.empty() ? ctx_.name : ctx_.name + "/" + std::string(r.key);
    e.event_time_ns = r.end_ns;
    e.ingest_time_ns = ctx_.now_ns();
    e.format = PayloadFormat::kJson;
    e.payload = std::move(payload);
    emitted_->Add();
    out_->Emit(std::move(e));
  }

  WindowSettings settings_;
  eventtime::WindowStore store_;
  PluginContext ctx_;
  ProcessorOutput* out_ = nullptr;
  std::optional<eventtime::WindowSpec> pending_spec_;
  int64_t next_expiry_ns_ = 0;
  observe::Counter* emitted_;
  observe::Gauge* keys_gauge_;
  observe::Gauge* windows_gauge_;
  observe::Counter* keys_refused_;
  observe::Counter* windows_refused_;
};

}  // namespace

const Options<WindowSettings::Given>& WindowSettings::Schema() {
  using S = WindowSettings::Given;
  static const Options<S> o =
      Options<S>()
          .Add(&S::size, {.name = "size", .doc = "window length", .required = true})
          .Add(&S::slide,
               {.name = "slide", .doc = "sliding step (must divide size); absent = tumbling"})
          .Add(&S::field,
               {.name = "field", .doc = "numeric payload field to aggregate (dotted path)"})
          .Add(&S::aggregates,
               {.name = "aggregates",
                .doc = "count, sum, min, max, avg, pNN (quantiles, DDSketch, 1% relative error); "
                       "without field: count",
                .default_value = "[count, sum, min, max, avg]"})
          .Add(&S::allowed_lateness,
               {.name = "allowed_lateness",
                .doc = "a fired window still takes late events this long (match the watermark's)",
                .default_value = "5m"})
          .Add(&S::state_ttl,
               {.name = "state_ttl",
                .doc = "keys with no event this long (wall clock) are flushed and forgotten",
                .default_value = "1h"})
          .Int(&S::max_keys,
               {.name = "max_keys",
                .doc = "most keys with open windows; past it a new key's events go to `error` "
                       "(the open keys go on)",
                .default_value = "100000",
                .validator = IntInRange(1)})
          .Int(&S::max_windows,
               {.name = "max_windows",
                .doc = "most windows in state, all keys together (about 0.4 KiB each); past it "
                       "an event that would open one goes to `error` (open windows go on)",
                .default_value = "1000000",
                .validator = IntInRange(1)})
          .Include(&S::key, eventtime::KeySelectorSchema());
  return o;
}

ProcessorFactory WindowProcessorFactory() {
  ProcessorFactory f;
  f.info.type = "window";
  f.info.kind = PluginKind::kProcessor;
  f.info.summary =
      "Keyed tumbling/sliding event-time windows: count, sum, min, max, avg, quantiles.";
  f.info.params = WindowSettings::Schema().Specs();
  f.create = [](const Params& p, PluginContext& ctx) -> Result<std::unique_ptr<Processor>> {
    SEEDANCE_ASSIGN_OR_RETURN(WindowSettings s, WindowSettings::From(p));
    return std::unique_ptr<Processor>(new WindowProcessor(std::move(s), ctx));
  };
  return f;
}

}  // namespace seedance::processors
