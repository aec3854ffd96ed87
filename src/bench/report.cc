#include "bench/report.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>

#include "observe/metrics.h"

namespace seedance::bench {
namespace {

using Writer = rapidjson::PrettyWriter<rapidjson::StringBuffer>;

double Round(double v, int digits) {
  const double scale = std::pow(10.0, digits);
  return std::round(v * scale) / scale;
}

void Key(Writer& w, const char* key) { w.Key(key); }
void Num(Writer& w, const char* key, double v, int digits = 3) {
  w.Key(key);
  w.Double(Round(v, digits));
}
void Int(Writer& w, const char* key, int64_t v) {
  w.Key(key);
  w.Int64(v);
}
void Str(Writer& w, const char* key, const std::string& v) {
  w.Key(key);
  w.String(v.c_str(), static_cast<rapidjson::SizeType>(v.size()));
}

// The figures compared by `bench compare`; the same keys at the top level (medians) and
// in each run.
void Figures(Writer& w, const RunFigures& f) {
  Int(w, "events_in", static_cast<int64_t>(f.events_in));
  Int(w, "events_out", static_cast<int64_t>(f.events_out));
  Int(w, "duplicates", static_cast<int64_t>(f.duplicates));
  Num(w, "throughput_eps", f.throughput_eps, 1);
  Key(w, "latency_ms");
  w.StartObject();
  Num(w, "p50", f.p50_ms);
  Num(w, "p95", f.p95_ms);
  Num(w, "p99", f.p99_ms);
  Num(w, "max", f.max_ms);
  w.EndObject();
  Int(w, "rss_peak_kb", f.rss_peak_kb);
  Int(w, "rss_idle_kb", f.rss_idle_kb);
  Num(w, "cpu_s", f.cpu_s);
  Num(w, "ready_ms", f.ready_ms, 2);
  Num(w, "duration_s", f.duration_s);
}

std::string FirstLineWith(const char* path, const std::string& prefix) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0) {
      size_t colon = line.find(':');
      size_t start = colon == std::string::npos ? prefix.size() : colon + 1;
      while (start < line.size() && line[start] == ' ') ++start;
      return line.substr(start);
    }
  }
  return "";
}

void Host(Writer& w) {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  utsname u{};
  uname(&u);
  w.StartObject();
  Str(w, "hostname", name);
  Str(w, "kernel", std::string(u.sysname) + " " + u.release + " " + u.machine);
  Str(w, "cpu", FirstLineWith("/proc/cpuinfo", "model name"));
  Int(w, "cpus", sysconf(_SC_NPROCESSORS_ONLN));
  Int(w, "mem_total_kb", std::atoll(FirstLineWith("/proc/meminfo", "MemTotal").c_str()));
  w.EndObject();
}

void Build(Writer& w) {
  w.StartObject();
  Str(w, "version", SEEDANCE_VERSION);
  Str(w, "build_type", SEEDANCE_BUILD_TYPE);
  Str(w, "compiler", __VERSION__);
  w.EndObject();
}

std::string UtcNow() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

}  // namespace

const std::vector<double>& LatencyBoundsMs() {
  static const std::vector<double> bounds = [] {
    std::vector<double> ms;
    for (double s : observe::LatencyBuckets()) ms.push_back(s * 1000);
    return ms;
  }();
  return bounds;
}

std::vector<uint64_t> BucketCounts(const std::vector<double>& latencies_ms) {
  const auto& bounds = LatencyBoundsMs();
  std::vector<uint64_t> counts(bounds.size() + 1);
  for (double v : latencies_ms) {
    counts[std::lower_bound(bounds.begin(), bounds.end(), v) - bounds.begin()]++;
  }
  return counts;
}

double Percentile(std::vector<double>& values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(values.size())));
  return values[std::clamp<size_t>(rank, 1, values.size()) - 1];
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

std::string ReportJson(const ReportContext& context, const std::vector<RunFigures>& runs) {
  // The top level: the median of each figure over the runs.
  RunFigures median;
  auto med = [&](auto field) {
    std::vector<double> v;
    for (const auto& r : runs) v.push_back(static_cast<double>(r.*field));
    return Median(v);
  };
  median.events_in = static_cast<uint64_t>(med(&RunFigures::events_in));
  median.events_out = static_cast<uint64_t>(med(&RunFigures::events_out));
  median.duplicates = static_cast<uint64_t>(med(&RunFigures::duplicates));
  median.throughput_eps = med(&RunFigures::throughput_eps);
  median.p50_ms = med(&RunFigures::p50_ms);
  median.p95_ms = med(&RunFigures::p95_ms);
  median.p99_ms = med(&RunFigures::p99_ms);
  median.max_ms = med(&RunFigures::max_ms);
  median.rss_peak_kb = static_cast<int64_t>(med(&RunFigures::rss_peak_kb));
  median.rss_idle_kb = static_cast<int64_t>(med(&RunFigures::rss_idle_kb));
  median.cpu_s = med(&RunFigures::cpu_s);
  median.ready_ms = med(&RunFigures::ready_ms);
  median.duration_s = med(&RunFigures::duration_s);

  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  w.SetMaxDecimalPlaces(6);
  w.StartObject();
  Str(w, "tool", "seedance bench");
  Str(w, "started_at", UtcNow());
  Int(w, "repetitions", static_cast<int64_t>(runs.size()));
  Str(w, "summary", runs.size() > 1 ? "median of the runs" : "single run");
  Figures(w, median);
  Key(w, "job");
  w.StartObject();
  Str(w, "config", context.config);
  Str(w, "filter", context.filter);
  Str(w, "load", context.load);
  Num(w, "rate", context.rate);
  Int(w, "count", static_cast<int64_t>(context.count));
  Num(w, "duration_s", context.duration_s);
  w.EndObject();
  Key(w, "host");
  Host(w);
  Key(w, "build");
  Build(w);
  Num(w, "interval_s", context.interval_s);
  Key(w, "latency_bucket_bounds_ms");
  w.StartArray();
  for (double b : LatencyBoundsMs()) w.Double(b);
  w.EndArray();
  Key(w, "runs");
  w.StartArray();
  for (const auto& r : runs) {
    w.StartObject();
    Figures(w, r);
    Key(w, "timeline");
    w.StartArray();
    for (const auto& p : r.timeline) {
      w.SetFormatOptions(rapidjson::kFormatSingleLineArray);
      w.StartObject();
      Num(w, "t_s", p.t_s);
      Int(w, "rss_kb", p.rss_kb);
      Int(w, "events_in", static_cast<int64_t>(p.events_in));
      Int(w, "events_out", static_cast<int64_t>(p.events_out));
      Num(w, "p50_ms", p.p50_ms);
      Num(w, "p99_ms", p.p99_ms);
      Key(w, "latency_buckets");
      w.StartArray();
      for (uint64_t c : p.latency_buckets) w.Uint64(c);
      w.EndArray();
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return std::string(buffer.GetString()) + "\n";
}

}  // namespace seedance::bench
