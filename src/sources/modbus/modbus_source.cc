#include "sources/modbus/modbus_source.h"

#include <fmt/format.h>

#include <boost/asio/steady_timer.hpp>
#include <deque>
#include <map>

#include "observe/component_stats.h"
#include "observe/metrics.h"
#include "seedance/plugin_context.h"
#include "sources/modbus/modbus_settings.h"
#include "sources/modbus/poll_group.h"
#include "sources/modbus/transport.h"
#include "util/event_loop.h"
#include "util/log.h"
#include "util/strings.h"

namespace seedance::sources {
namespace {

using namespace modbus_source;  // NOLINT: this file is the source's own
using Clock = std::chrono::steady_clock;

class ModbusSource final : public Source, public Acknowledger {
 public:
  ModbusSource(ModbusSettings settings, PluginContext ctx)
      : settings_(std::move(settings)),
        ctx_(std::move(ctx)),
        labels_{{"component", ctx_.name}},
        connected_(ctx_.metrics->GetGauge(
            "seedance_modbus_connected",
            "1 while the modbus source's connection (or serial line) is open.", labels_)),
        committed_(ctx_.metrics->GetCounter(
            "seedance_modbus_polls_committed_total",
            "Poll events the pipeline has made durable (written to the queue).", labels_)),
        retry_timer_(ctx_.loop->io()) {
    for (const GroupSettings& g : settings_.groups) {
      auto run = std::make_unique<GroupRun>(g, settings_.limits(), ctx_.loop->io());
      run->interval = g.interval;
      run->topic = settings_.topic;
      util::ReplaceAll(run->topic, "{unit}", std::to_string(g.unit));
      util::ReplaceAll(run->topic, "{group}", g.name);
      observe::Labels l = labels_;
      l.emplace_back("group", g.name);
      l.emplace_back("unit", std::to_string(g.unit));
      run->ok = &Counter("seedance_modbus_polls_total",
                         "Polls answered, by result (ok, exception).", l, "result", "ok");
      run->exception =
          &Counter("seedance_modbus_polls_total", "Polls answered, by result (ok, exception).", l,
                   "result", "exception");
      for (const char* reason : {"overrun", "unreachable", "failed", "backpressure"}) {
        run->missed[reason] =
            &Counter("seedance_modbus_polls_missed_total",
                     "Polls not taken, by reason: overrun (the last one had not finished at the "
                     "next's time), unreachable (no connection), failed (no valid answer after "
                     "the retries), backpressure (the pipeline was full).",
                     l, "reason", reason);
      }
      groups_.push_back(std::move(run));
    }
    for (Failure f : {Failure::kUnreachable, Failure::kTimeout, Failure::kDropped,
                      Failure::kGarbled, Failure::kCrc}) {
      errors_[f] = &Counter("seedance_modbus_request_errors_total",
                            "Requests that failed, by kind (each retry counts).", labels_, "kind",
                            std::string(FailureName(f)));
    }
    retries_ = &ctx_.metrics->GetCounter("seedance_modbus_retries_total",
                                         "Requests sent again after a failure.", labels_);
  }

  ~ModbusSource() override { Stop(); }

  Status Start(SourceOutput& output) override {
    output_ = &output;
    transport_ = settings_.endpoint.rtu ? MakeRtuTransport(*ctx_.loop, settings_)
                                        : MakeTcpTransport(*ctx_.loop, settings_);
    size_t tags = 0;
    for (const auto& g : groups_) tags += g->poll.tag_count();
    util::Log(util::LogLevel::kInfo, ctx_.name, "polling {} group(s), {} tag(s) on {}",
              groups_.size(), tags,
              settings_.endpoint.rtu
                  ? settings_.endpoint.device
                  : fmt::format("{}:{}", settings_.endpoint.host, settings_.endpoint.port));
    for (const auto& g : groups_) {
      util::Log(util::LogLevel::kInfo, ctx_.name,
                "group \"{}\" (unit {}): {} tags in {} reads every {} ms", g->poll.name(),
                g->poll.unit(), g->poll.tag_count(), g->poll.reads().size(),
                std::chrono::duration_cast<std::chrono::milliseconds>(g->interval).count());
    }
    const Clock::time_point start = Clock::now();
    for (auto& g : groups_) {
      g->start = start;
      g->k = 0;
      Schedule(*g);
    }
    return Status::Ok();
  }

  void Stop() override {
    if (stopped_) return;
    stopped_ = true;
    for (auto& g : groups_) g->timer.cancel();
    retry_timer_.cancel();
    if (transport_) transport_->Shutdown();
    connected_.Set(0);
  }

  // Any thread: the pipeline made a poll's event durable.
  void Acknowledge(uint64_t) override { committed_.Add(); }

 private:
  struct GroupRun {
    GroupRun(const GroupSettings& g, const modbus::PlanLimits& limits, boost::asio::io_context& io)
        : poll(g, limits), timer(io) {}
    PollGroup poll;
    boost::asio::steady_timer timer;
    std::chrono::nanoseconds interval{};
    std::string topic;
    Clock::time_point start;
    int64_t k = 0;            // the next poll's number: due at start + k x interval
    bool busy = false;        // queued or being polled
    size_t read = 0;          // the read being sent
    int attempt = 0;          // retries of it so far
    int64_t time_ns = 0;      // the poll's time (its first request)
    Clock::time_point began;  // the same, steady
    uint64_t seq = 0;         // events emitted
    bool failing = false;     // a failure was logged; the next success says so
    observe::Counter* ok = nullptr;
    observe::Counter* exception = nullptr;
    std::map<std::string, observe::Counter*, std::less<>> missed;
  };

  // The counter `name` with the labels `l` and one more, `key`="value".
  observe::Counter& Counter(const char* name, const char* help, observe::Labels l,
                            const std::string& key, const std::string& value) {
    l.emplace_back(key, value);
    return ctx_.metrics->GetCounter(name, help, l);
  }

  // Polls are due at start + k x interval: a late timer does not move the ones after it.
  void Schedule(GroupRun& g) {
    g.timer.expires_at(g.start + g.k * g.interval);
    g.timer.async_wait([this, &g](boost::system::error_code ec) {
      if (ec || stopped_) return;
      Due(g);
    });
  }

  void Due(GroupRun& g) {
    if (g.busy) {
      g.missed["overrun"]->Add();
    } else {
      g.busy = true;
      waiting_.push_back(&g);
      Pump();
    }
    // The next poll: the first due time still ahead; any passed meanwhile are missed.
    const auto now = Clock::now();
    ++g.k;
    const int64_t behind = (now - g.start) / g.interval + 1;
    if (behind > g.k) {
      g.missed["overrun"]->Add(static_cast<uint64_t>(behind - g.k));
      g.k = behind;
    }
    Schedule(g);
  }

  // Starts the next waiting poll when none is out: one request at a time per line.
  void Pump() {
    if (running_ != nullptr || waiting_.empty() || stopped_) return;
    running_ = waiting_.front();
    waiting_.pop_front();
    running_->read = 0;
    running_->attempt = 0;
    running_->time_ns = ctx_.now_ns();
    running_->began = Clock::now();
    SendRead(*running_);
  }

  void SendRead(GroupRun& g) {
    const modbus::PlannedRead& r = g.poll.reads()[g.read];
    transport_->Read(g.poll.unit(), r.area, r.address, r.count,
                     [this, &g](Outcome o) { OnAnswer(g, std::move(o)); });
  }

  void OnAnswer(GroupRun& g, Outcome o) {
    if (stopped_) return;
    connected_.Set(transport_->connected() ? 1 : 0);
    if (!o.ok) {
      errors_[o.failure]->Add();
      if (o.failure != Failure::kUnreachable && g.attempt < settings_.retries) {
        const auto wait = settings_.retry_backoff * (int64_t{1} << g.attempt);
        ++g.attempt;
        retries_->Add();
        retry_timer_.expires_after(wait);
        retry_timer_.async_wait([this, &g](boost::system::error_code ec) {
          if (!ec && !stopped_) SendRead(g);
        });
        return;
      }
      g.missed[o.failure == Failure::kUnreachable ? "unreachable" : "failed"]->Add();
      if (!g.failing) {
        g.failing = true;
        util::Log(util::LogLevel::kWarn, ctx_.name,
                  "group \"{}\" (unit {}): poll failed: {} ({}{}); polls are counted missed "
                  "until the device answers",
                  g.poll.name(), g.poll.unit(), o.detail, FailureName(o.failure),
                  g.attempt > 0 ? fmt::format(", after {} retries", g.attempt) : "");
      }
      End(g);
      return;
    }
    const modbus::PlannedRead& r = g.poll.reads()[g.read];
    if (o.answer.exception) {
      Exception(g, r, o.answer.exception_code);
      End(g);
      return;
    }
    g.poll.SetAnswer(g.read, std::move(o.answer.data));
    g.attempt = 0;
    if (++g.read < g.poll.reads().size()) {
      SendRead(g);
      return;
    }
    if (g.failing) {
      util::Log(util::LogLevel::kInfo, ctx_.name, "group \"{}\" (unit {}): polls answered again",
                g.poll.name(), g.poll.unit());
      g.failing = false;
    }
    g.ok->Add();
    Emit(g);
    End(g);
  }

  void Emit(GroupRun& g) {
    std::optional<std::string> payload = g.poll.Payload(g.seq, g.time_ns, g.began);
    if (!payload) return;  // report: changes, nothing changed
    Event e = output_->TakeEvent();
    Fill(e, g, std::move(*payload));
    if (!output_->TryEmit(e, AckHandle{.owner = this, .token = g.seq + 1})) {
      g.missed["backpressure"]->Add();
      return;
    }
    g.poll.Reported();
    ++g.seq;
    ctx_.stats->events_in.Add();
    ctx_.stats->events_out.Add();
  }

  // An exception answer: the poll goes to `error` with the exception's name (the pipeline logs
  // the reason once).
  void Exception(GroupRun& g, const modbus::PlannedRead& r, uint8_t code) {
    g.exception->Add();
    const std::string name = modbus::ExceptionName(code);
    std::string payload = fmt::format(R"({{"unit":{},"group":)", g.poll.unit());
    modbus::AppendTagValueJson(modbus::TagValue(g.poll.name()), payload);
    fmt::format_to(std::back_inserter(payload),
                   R"(,"time_ns":{},"exception":"{}","code":{},"area":"{}","address":{},)"
                   R"("count":{}}})",
                   g.time_ns, name, code, modbus::AreaName(r.area), r.address, r.count);
    const std::string reason =
        fmt::format("modbus exception {} (code {}) from unit {} reading {} {}-{}", name, code,
                    g.poll.unit(), modbus::AreaName(r.area), r.address, r.address + r.count - 1);
    Event e = output_->TakeEvent();
    Fill(e, g, std::move(payload));
    if (!output_->TryEmitInvalid(e, AckHandle{}, reason)) g.missed["backpressure"]->Add();
  }

  void Fill(Event& e, const GroupRun& g, std::string payload) {
    e.source = ctx_.name;
    e.topic = g.topic;
    e.format = PayloadFormat::kJson;
    e.ingest_time_ns = ctx_.now_ns();
    e.event_time_ns = g.time_ns;
    e.payload = std::move(payload);
    e.headers.clear();
    e.SetHeader("modbus_unit", std::to_string(g.poll.unit()));
    e.SetHeader("modbus_group", g.poll.name());
  }

  void End(GroupRun& g) {
    g.busy = false;
    running_ = nullptr;
    Pump();
  }

  ModbusSettings settings_;
  PluginContext ctx_;
  observe::Labels labels_;
  observe::Gauge& connected_;
  observe::Counter& committed_;
  observe::Counter* retries_ = nullptr;
  std::map<Failure, observe::Counter*> errors_;
  boost::asio::steady_timer retry_timer_;
  std::vector<std::unique_ptr<GroupRun>> groups_;
  std::deque<GroupRun*> waiting_;
  GroupRun* running_ = nullptr;
  std::shared_ptr<Transport> transport_;
  SourceOutput* output_ = nullptr;
  bool stopped_ = false;
};

}  // namespace

SourceFactory ModbusSourceFactory() {
  SourceFactory f;
  f.info.type = "modbus";
  f.info.kind = PluginKind::kSource;
  f.info.summary =
      "Polls Modbus TCP or RTU devices (function codes 1-4): tags in poll groups, one event per "
      "group per poll.";
  f.info.params = ModbusOptions().Specs();
  f.create = [](const Params& p, PluginContext& ctx) -> Result<std::unique_ptr<Source>> {
    SEEDANCE_ASSIGN_OR_RETURN(ModbusSettings s, ModbusOptions().Bind(p));
    SEEDANCE_RETURN_IF_ERROR(Prepare(s, p));
    return std::unique_ptr<Source>(new ModbusSource(std::move(s), ctx));
  };
  return f;
}

}  // namespace seedance::sources
