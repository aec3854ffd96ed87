#include "sources/prometheus/scrape_source.h"

#include <fmt/format.h>

#include <boost/asio/steady_timer.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cmath>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "http/client.h"
#include "http/url.h"
#include "observe/component_stats.h"
#include "observe/prometheus_text.h"
#include "seedance/options.h"
#include "seedance/plugin_context.h"
#include "util/event_loop.h"
#include "util/log.h"
#include "util/strings.h"

namespace seedance::sources {
namespace {

namespace bhttp = boost::beast::http;
using Clock = std::chrono::steady_clock;

// What Prometheus asks for: OpenMetrics preferred, the text format taken.
constexpr const char* kAccept =
    "application/openmetrics-text;version=1.0.0;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

struct ScrapeSettings {
  std::vector<std::string> targets;
  std::chrono::nanoseconds interval{std::chrono::seconds(15)};
  std::chrono::nanoseconds timeout{std::chrono::seconds(10)};
  std::string topic;
  uint64_t max_body = 16 << 20;
  int64_t max_samples = 100000;
  std::string ca_file;
  bool tls_verify = true;
};

const Options<ScrapeSettings>& ScrapeSchema() {
  using S = ScrapeSettings;
  static const Options<S> o =
      Options<S>()
          .Add(&S::targets,
               {.name = "targets",
                .doc = "URLs of the pages to scrape, e.g. http://127.0.0.1:9100/metrics",
                .required = true,
                .validator = [](const ParamValue& v) -> Status {
                  const auto& list = std::get<std::vector<std::string>>(v);
                  if (list.empty()) return InvalidArgumentError("needs at least one URL");
                  for (const std::string& u : list) {
                    auto url = http::ParseUrl(u);
                    if (!url) return url.error();
                  }
                  return Status::Ok();
                }})
          .Add(&S::interval, {.name = "interval",
                              .doc = "time between two scrapes of a target (at least 100ms)",
                              .default_value = "15s"})
          .Add(&S::timeout, {.name = "timeout",
                             .doc = "a scrape not answered within this fails (at most interval)",
                             .default_value = "10s"})
          .Add(&S::topic,
               {.name = "topic", .doc = "topic of the events", .default_value = "prometheus"})
          .Size(&S::max_body, {.name = "max_body",
                               .doc = "largest page taken; a longer one fails the scrape",
                               .default_value = "16MiB"})
          .Int(&S::max_samples, {.name = "max_samples",
                                 .doc = "most samples one page may hold; more fail the scrape",
                                 .default_value = "100000",
                                 .validator = IntInRange(1, 10000000)})
          .Add(&S::ca_file, {.name = "ca_file",
                             .doc = "CA certificates for https targets (default: the system's)",
                             .default_value = ""})
          .Add(&S::tls_verify, {.name = "tls_verify",
                                .doc = "verify https targets' certificates and host names",
                                .default_value = "true"})
          .Check([](const S& s, const Params& p) -> Status {
            if (s.interval < std::chrono::milliseconds(100)) {
              return InvalidArgumentError(p.Location("interval") +
                                          ": interval: must be at least 100ms");
            }
            if (s.timeout <= std::chrono::nanoseconds(0) || s.timeout > s.interval) {
              // Name both: the timeout may be the default (10s) under a short interval.
              return InvalidArgumentError(fmt::format(
                  "{}: timeout: must be above 0 and at most interval (timeout {} ms{}, "
                  "interval {} ms)",
                  p.Location("timeout"),
                  std::chrono::duration_cast<std::chrono::milliseconds>(s.timeout).count(),
                  p.IsDefaulted("timeout") ? ", the default" : "",
                  std::chrono::duration_cast<std::chrono::milliseconds>(s.interval).count()));
            }
            return Status::Ok();
          });
  return o;
}

std::string JsonNumber(double v) {
  if (std::isnan(v)) return "\"NaN\"";
  if (std::isinf(v)) return v > 0 ? "\"+Inf\"" : "\"-Inf\"";
  return fmt::format("{}", v);
}

class ScrapeSource;

// One target: its client, and the exchange of its scrape in progress.
class Target final : public http::Exchange {
 public:
  Target(ScrapeSource& source, std::shared_ptr<http::Client> client, std::string url,
         observe::ParseLimits limits, boost::asio::io_context& io)
      : source_(source),
        client_(std::move(client)),
        url_(std::move(url)),
        limits_(limits),
        deadline_(io) {}

  void Scrape(std::chrono::nanoseconds timeout, uint64_t id);
  void Stop() {
    deadline_.cancel();
    client_->Stop();
  }
  const std::string& url() const { return url_; }
  std::string instance() const { return client_->url().HostHeader(); }

  bool busy = false;          // a scrape is in progress, or its events wait to be emitted
  Clock::time_point started;  // of the scrape in progress
  int64_t started_ns = 0;     // wall clock
  bool failing = false;       // the last scrape failed (logged once per episode)

 private:
  void Answered(const http::Answer& answer) override;
  void Failed(std::string reason, bool stopped) override;

  ScrapeSource& source_;
  std::shared_ptr<http::Client> client_;
  const std::string url_;
  const observe::ParseLimits limits_;
  boost::asio::steady_timer deadline_;
  uint64_t id_ = 0;
  std::chrono::nanoseconds timeout_{0};
  bool timed_out_ = false;
};

class ScrapeSource final : public Source {
 public:
  ScrapeSource(ScrapeSettings settings, PluginContext ctx)
      : settings_(std::move(settings)),
        ctx_(std::move(ctx)),
        timer_(ctx_.loop->io()),
        skipped_(&ctx_.metrics->GetCounter(
            "seedance_events_dropped_total", "Events that left the main stream, by reason.",
            {{"component", ctx_.name}, {"kind", "source"}, {"reason", "scrape_skipped"}})) {}
  ~ScrapeSource() override {
    if (ctx_.memory != nullptr && pending_bytes_ > 0) ctx_.memory->Credit(pending_bytes_);
  }

  Status Init() {
    for (const std::string& u : settings_.targets) {
      SEEDANCE_ASSIGN_OR_RETURN(http::Url url, http::ParseUrl(u));
      SEEDANCE_ASSIGN_OR_RETURN(
          std::shared_ptr<http::Client> client,
          http::Client::Make(ctx_.loop->io(), {.url = url,
                                               .ca_file = settings_.ca_file,
                                               .verify = settings_.tls_verify,
                                               .max_response_body = settings_.max_body,
                                               .component = ctx_.name}));
      const observe::ParseLimits limits{.max_samples = static_cast<size_t>(settings_.max_samples)};
      targets_.push_back(
          std::make_unique<Target>(*this, std::move(client), u, limits, ctx_.loop->io()));
    }
    return Status::Ok();
  }

  Status Start(SourceOutput& output) override {
    output_ = &output;
    start_ = Clock::now();
    Tick();
    return Status::Ok();
  }
  void Stop() override {
    stopped_ = true;
    timer_.cancel();
    for (auto& t : targets_) t->Stop();
    // The pipeline takes nothing more: a page still waiting for room is not taken, whole.
    if (!pending_.empty()) {
      size_t samples = 0;
      for (const Page& p : pending_) samples += p.events.size() - 1;  // less its up event
      skipped_->Add(pending_.size());
      SEEDANCE_LOG_INFO(ctx_.name,
                        "stopping: {} scraped page(s) ({} samples) still waiting for room in the "
                        "pipeline are not taken (counted as scrape_skipped)",
                        pending_.size(), samples);
    }
  }

  // The scrape of `t` ended: `page` when it answered 200, else why it failed.
  void Scraped(Target& t, const Result<std::vector<observe::Sample>>& page) {
    if (stopped_) return;
    const double took = std::chrono::duration<double>(Clock::now() - t.started).count();
    const std::string instance = t.instance();
    auto common = [&](std::string& out) {
      out += ",\"instance\":";
      util::AppendJsonString(out, instance);
      out += ",\"job\":";
      util::AppendJsonString(out, ctx_.name);
    };
    size_t samples = 0;
    Page out{.target = &t};
    if (page) {
      samples = page->size();
      out.events.reserve(samples + 1);
      for (const observe::Sample& s : *page) {
        Event e = output_->TakeEvent();
        e.payload.clear();
        e.payload += "{\"name\":";
        util::AppendJsonString(e.payload, s.name);
        e.payload += ",\"labels\":{";
        for (size_t i = 0; i < s.labels.size(); ++i) {
          if (i > 0) e.payload += ',';
          util::AppendJsonString(e.payload, s.labels[i].first);
          e.payload += ':';
          util::AppendJsonString(e.payload, s.labels[i].second);
        }
        e.payload += "},\"value\":" + JsonNumber(s.value);
        if (s.timestamp_ms) e.payload += fmt::format(",\"timestamp_ms\":{}", *s.timestamp_ms);
        common(e.payload);
        e.payload += '}';
        e.event_time_ns = s.timestamp_ms ? *s.timestamp_ms * 1000000 : t.started_ns;
        out.events.push_back(std::move(e));
      }
      if (t.failing) {
        t.failing = false;
        SEEDANCE_LOG_INFO(ctx_.name, "scraping {} works again", t.url());
      }
    } else {
      ctx_.stats->errors.Add();
      if (!t.failing) {
        t.failing = true;
        SEEDANCE_LOG_WARN(ctx_.name, "scrape of {} failed: {} (logged once until it works)",
                          t.url(), page.error().message());
      }
    }
    Event up = output_->TakeEvent();
    up.payload.clear();
    up.payload += fmt::format("{{\"name\":\"up\",\"labels\":{{}},\"value\":{}", page ? 1 : 0);
    common(up.payload);
    up.payload +=
        fmt::format(",\"scrape_duration_seconds\":{:.6f},\"scrape_samples\":{}", took, samples);
    if (!page) {
      up.payload += ",\"error\":";
      util::AppendJsonString(up.payload, util::SanitizeText(page.error().message(), 512));
    }
    up.payload += '}';
    up.event_time_ns = t.started_ns;
    out.events.push_back(std::move(up));
    Hold(std::move(out));
    Emit();
  }

 private:
  // A scrape's events, its samples then its up event: handed on whole (TryEmitAll), so no
  // page is ever cut, by backpressure or by a stop.
  struct Page {
    std::vector<Event> events;
    Target* target = nullptr;
    uint64_t bytes = 0;  // charged to limits.memory while it waits here
  };

  // A page waits here while the pipeline has no room for it (one per target: a target is not
  // scraped again before its page left), charged to limits.memory like the ingest queue it
  // waits for.
  void Hold(Page page) {
    for (Event& e : page.events) {
      e.source.assign(ctx_.name);
      e.topic.assign(settings_.topic);
      e.format = PayloadFormat::kJson;
      if (ctx_.memory != nullptr) page.bytes += e.MemoryBytes();
    }
    if (page.bytes > 0) {
      ctx_.memory->Charge(page.bytes);
      pending_bytes_ += page.bytes;
    }
    pending_.push_back(std::move(page));
  }

  void Tick() {
    if (stopped_) return;
    const auto now = Clock::now();
    for (auto& t : targets_) {
      if (t->busy) {
        skipped_->Add();
        continue;
      }
      t->busy = true;
      t->started = now;
      t->started_ns = ctx_.now_ns();
      t->Scrape(settings_.timeout, ++next_id_);
    }
    // The next one on the schedule from the start; those missed are skipped, not run late.
    const auto interval = std::chrono::duration_cast<Clock::duration>(settings_.interval);
    const auto k = (Clock::now() - start_) / interval + 1;
    timer_.expires_at(start_ + k * interval);
    timer_.async_wait([this](boost::system::error_code ec) {
      if (!ec) Tick();
    });
  }

  void Emit() {
    while (!pending_.empty() && !stopped_) {
      Page& p = pending_.front();
      const int64_t now = ctx_.now_ns();
      for (Event& e : p.events) e.ingest_time_ns = now;
      const size_t n = p.events.size();
      if (!output_->TryEmitAll(p.events, nullptr, 0)) {
        if (!waiting_) {
          waiting_ = true;
          output_->WhenRoomFor(n, [this] {
            waiting_ = false;
            Emit();
          });
        }
        return;
      }
      ctx_.stats->events_in.Add(n);
      ctx_.stats->events_out.Add(n);
      p.target->busy = false;
      if (p.bytes > 0) {
        ctx_.memory->Credit(p.bytes);
        pending_bytes_ -= p.bytes;
      }
      pending_.pop_front();
    }
  }

  ScrapeSettings settings_;
  PluginContext ctx_;
  boost::asio::steady_timer timer_;
  observe::Counter* skipped_;
  std::vector<std::unique_ptr<Target>> targets_;
  std::deque<Page> pending_;
  uint64_t pending_bytes_ = 0;  // of pending_, charged to ctx_.memory
  SourceOutput* output_ = nullptr;
  Clock::time_point start_;
  uint64_t next_id_ = 0;
  bool waiting_ = false;
  bool stopped_ = false;
};

void Target::Scrape(std::chrono::nanoseconds timeout, uint64_t id) {
  id_ = id;
  timeout_ = timeout;
  timed_out_ = false;
  http::ClientRequest& req = client_->NewRequest(*this, bhttp::verb::get, std::string());
  req.set(bhttp::field::accept, kAccept);
  req.set("X-Prometheus-Scrape-Timeout-Seconds",
          fmt::format("{:.3f}", std::chrono::duration<double>(timeout).count()));
  deadline_.expires_after(timeout);
  deadline_.async_wait([this, id](boost::system::error_code ec) {
    if (ec || id_ != id) return;
    timed_out_ = true;
    client_->Abort(id);
  });
  client_->Send(*this, id);
}

void Target::Answered(const http::Answer& answer) {
  deadline_.cancel();
  if (answer.status != 200) {
    source_.Scraped(
        *this, Status(StatusCode::kUnavailable, fmt::format("answered HTTP {}", answer.status)));
    return;
  }
  if (answer.body_cut) {
    source_.Scraped(*this, Status(StatusCode::kResourceExhausted,
                                  "the page is over max_body or was cut short"));
    return;
  }
  source_.Scraped(
      *this, observe::ParseExposition(answer.body,
                                      observe::FormatOfContentType(answer.content_type), limits_));
}

void Target::Failed(std::string reason, bool stopped) {
  deadline_.cancel();
  if (stopped) return;
  if (timed_out_) {
    reason = fmt::format("no answer within timeout ({} ms)",
                         std::chrono::duration_cast<std::chrono::milliseconds>(timeout_).count());
  }
  source_.Scraped(*this, Status(StatusCode::kUnavailable, std::move(reason)));
}

}  // namespace

SourceFactory PrometheusScrapeSourceFactory() {
  SourceFactory f;
  f.info.type = "prometheus_scrape";
  f.info.kind = PluginKind::kSource;
  f.info.summary = "Scrapes Prometheus /metrics pages (text format, OpenMetrics) into events.";
  f.info.params = ScrapeSchema().Specs();
  f.create = [](const Params& p, PluginContext& ctx) -> Result<std::unique_ptr<Source>> {
    SEEDANCE_ASSIGN_OR_RETURN(ScrapeSettings s, ScrapeSchema().Bind(p));
    auto source = std::make_unique<ScrapeSource>(std::move(s), ctx);
    SEEDANCE_RETURN_IF_ERROR(source->Init());
    return std::unique_ptr<Source>(std::move(source));
  };
  return f;
}

}  // namespace seedance::sources
