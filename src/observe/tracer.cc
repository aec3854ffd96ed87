#include "observe/tracer.h"

#include <fmt/format.h>

#include <algorithm>
#include <random>

#include "http/fetch.h"
#include "util/clock.h"
#include "util/otlp_common.h"
#include "util/protobuf_writer.h"
#include "util/random_seed.h"
#include "util/strings.h"
#include "util/thread_name.h"

namespace seedance::observe {
namespace {

// Ids as the W3C and OTLP ask: random, never all zero. Each thread draws from its own
// generator (seeded from getrandom), so the processing thread and the event loop share nothing.
std::mt19937_64& Rng() {
  thread_local std::mt19937_64 rng = [] {
    std::seed_seq seq{util::RandomSeed(), util::RandomSeed()};
    return std::mt19937_64(seq);
  }();
  return rng;
}

template <size_t N>
void RandomId(std::array<uint8_t, N>* id) {
  do {
    for (size_t i = 0; i < N; i += 8) {
      const uint64_t r = Rng()();
      for (size_t j = 0; j < 8 && i + j < N; ++j) (*id)[i + j] = static_cast<uint8_t>(r >> (8 * j));
    }
  } while (std::all_of(id->begin(), id->end(), [](uint8_t b) { return b == 0; }));
}

template <size_t N>
std::string_view Bytes(const std::array<uint8_t, N>& a) {
  return {reinterpret_cast<const char*>(a.data()), N};
}

using util::AppendOtlpStringKeyValue;

}  // namespace

std::string EncodeSpans(const std::vector<SpanRecord>& spans, std::string_view service_name) {
  std::string out;
  util::ProtobufWriter w(out);
  const size_t resource_spans = w.BeginMessage(1);
  const size_t resource = w.BeginMessage(1);
  AppendOtlpStringKeyValue(w, 1, "service.name", service_name);
  AppendOtlpStringKeyValue(w, 1, "service.version", SEEDANCE_VERSION);
  w.EndMessage(resource);
  const size_t scope_spans = w.BeginMessage(2);
  const size_t scope = w.BeginMessage(1);
  w.Bytes(1, "seedance");
  w.Bytes(2, SEEDANCE_VERSION);
  w.EndMessage(scope);
  std::string name;
  for (const SpanRecord& s : spans) {
    const size_t span = w.BeginMessage(2);
    w.Bytes(1, Bytes(s.context.trace_id));
    w.Bytes(2, Bytes(s.context.span_id));
    if (std::any_of(s.parent.begin(), s.parent.end(), [](uint8_t b) { return b != 0; })) {
      w.Bytes(4, Bytes(s.parent));
    }
    const bool process = s.what == SpanRecord::What::kProcess;
    name.assign(process ? "process " : "deliver ");
    name += s.component;
    w.Bytes(5, name);
    w.Varint(6, process ? 5 : 4);  // SPAN_KIND_CONSUMER : SPAN_KIND_PRODUCER
    w.Fixed64(7, static_cast<uint64_t>(s.start_ns));
    w.Fixed64(8, static_cast<uint64_t>(s.end_ns));
    AppendOtlpStringKeyValue(w, 9, "messaging.destination.name", s.topic);
    AppendOtlpStringKeyValue(w, 9, "messaging.operation.type", process ? "process" : "send");
    AppendOtlpStringKeyValue(w, 9, process ? "seedance.source" : "seedance.sink", s.component);
    const size_t status = w.BeginMessage(15);
    if (s.error) w.Bytes(2, s.status_message);
    w.Varint(3, s.error ? 2 : 0);  // STATUS_CODE_ERROR : STATUS_CODE_UNSET
    w.EndMessage(status);
    w.Fixed32(16, s.context.flags);
    w.EndMessage(span);
  }
  w.EndMessage(scope_spans);
  w.EndMessage(resource_spans);
  return out;
}

Tracer::Tracer(TracingSettings settings, MetricsRegistry& metrics)
    : settings_(std::move(settings)),
      exported_(metrics.GetCounter("seedance_tracing_spans_total",
                                   "Seedance's own spans by what became of them",
                                   {{"result", "exported"}})),
      dropped_full_(
          metrics.GetCounter("seedance_tracing_spans_total", "", {{"result", "queue_full"}})),
      dropped_failed_(
          metrics.GetCounter("seedance_tracing_spans_total", "", {{"result", "export_failed"}})) {}

Tracer::~Tracer() { Stop(); }

std::optional<SpanRecord> Tracer::BeginProcess(Event& e) {
  const std::optional<util::TraceContext> incoming = util::EventTraceContext(e);
  SpanRecord span;
  if (incoming && incoming->sampled()) {
    span.context = *incoming;
    span.parent = incoming->span_id;
  } else {
    if (settings_.sample_ratio <= 0 ||
        std::uniform_real_distribution<double>(0, 1)(Rng()) >= settings_.sample_ratio) {
      return std::nullopt;
    }
    RandomId(&span.context.trace_id);
    span.context.flags = util::TraceContext::kSampled;
  }
  RandomId(&span.context.span_id);
  e.SetHeader("traceparent", util::FormatTraceparent(span.context));
  span.what = SpanRecord::What::kProcess;
  span.start_ns = e.ingest_time_ns > 0 ? e.ingest_time_ns : util::WallNowNs();
  span.topic = util::SanitizeText(e.topic, kMaxTopic);
  span.component = e.source;
  return span;
}

void Tracer::End(SpanRecord&& span) {
  span.end_ns = std::max(util::WallNowNs(), span.start_ns);
  Queue(std::move(span));
}

void Tracer::RecordDelivery(const Event& e, std::string_view sink, int64_t start_ns, int64_t end_ns,
                            std::string_view refused) {
  const std::optional<util::TraceContext> parent = util::EventTraceContext(e);
  if (!parent || !parent->sampled()) return;
  SpanRecord span;
  span.context = *parent;
  span.parent = parent->span_id;
  RandomId(&span.context.span_id);
  span.what = SpanRecord::What::kDeliver;
  span.start_ns = start_ns;
  span.end_ns = std::max(start_ns, end_ns);
  span.error = !refused.empty();
  span.status_message = util::SanitizeText(refused, kMaxStatusMessage);
  span.topic = util::SanitizeText(e.topic, kMaxTopic);
  span.component = sink;
  Queue(std::move(span));
}

void Tracer::Queue(SpanRecord&& span) {
  std::unique_lock<std::mutex> lock(mu_);
  if (queued_.size() < settings_.max_queued_spans) {
    queued_.push_back(std::move(span));
    const bool wake = queued_.size() == kExportBatch;
    lock.unlock();
    if (wake) cv_.notify_one();
    return;
  }
  lock.unlock();
  dropped_full_.Add();
  uint64_t suppressed = 0;
  if (log_limiter_.Allow("full", &suppressed)) {
    SEEDANCE_LOG_WARN("tracing",
                      "{} spans wait for export (tracing.max_queued_spans): new spans are "
                      "dropped{}",
                      settings_.max_queued_spans,
                      suppressed ? fmt::format(" ({} similar lines not logged)", suppressed) : "");
  }
}

void Tracer::Start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] {
    util::NameThisThread("sd-tracing");
    Run();
  });
}

void Tracer::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void Tracer::Run() {
  std::vector<SpanRecord> batch;
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait_for(lock, settings_.interval,
                 [this] { return stopping_ || queued_.size() >= kExportBatch; });
    if (queued_.empty() && !stopping_) continue;
    const bool last = stopping_;
    // Everything queued goes, in batches, until an export fails: a dead endpoint costs a round
    // (and the shutdown) one timeout, not one per batch.
    bool ok = true;
    while (ok && !queued_.empty()) {
      const auto n = static_cast<ptrdiff_t>(std::min(queued_.size(), kExportBatch));
      batch.assign(std::make_move_iterator(queued_.begin()),
                   std::make_move_iterator(queued_.begin() + n));
      queued_.erase(queued_.begin(), queued_.begin() + n);
      lock.unlock();
      ok = Export(batch);
      lock.lock();
    }
    if (last) {
      dropped_failed_.Add(queued_.size());
      queued_.clear();
      return;
    }
  }
}

bool Tracer::Export(std::vector<SpanRecord>& spans) {
  const std::string body = EncodeSpans(spans, settings_.service_name);
  auto reply = http::Fetch("POST", settings_.url, body, "application/x-protobuf", settings_.timeout,
                           /*max_body=*/1 << 20);
  std::string why;
  if (!reply) {
    why = reply.error().message();
  } else if (reply->status < 200 || reply->status >= 300) {
    why = fmt::format("HTTP {}", reply->status);
  }
  if (why.empty()) {
    exported_.Add(spans.size());
  } else {
    dropped_failed_.Add(spans.size());
    uint64_t suppressed = 0;
    if (log_limiter_.Allow("export", &suppressed)) {
      SEEDANCE_LOG_WARN(
          "tracing", "export of {} spans to {} failed, dropped: {}{}", spans.size(), settings_.url,
          why, suppressed ? fmt::format(" ({} similar lines not logged)", suppressed) : "");
    }
  }
  spans.clear();
  return why.empty();
}

}  // namespace seedance::observe
