#include "slo/slo_check.h"

#include <fmt/format.h>
#include <rapidjson/document.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace seedance::slo {
namespace {

constexpr const char* kLatencyBucket = "seedance_event_latency_seconds_bucket";
constexpr const char* kEventsOut = "seedance_events_out_total";

// Cumulative bucket counts by upper bound, summed over every series of the histogram.
std::map<double, double> LatencyBuckets(const std::vector<Sample>& samples) {
  std::map<double, double> by_le;
  for (const auto& s : samples) {
    if (s.name != kLatencyBucket) continue;
    std::string le = s.Label("le");
    double bound = le == "+Inf" ? INFINITY : std::strtod(le.c_str(), nullptr);
    by_le[bound] += s.value;
  }
  return by_le;
}

double SinkEventsOut(const std::vector<Sample>& samples) {
  double total = 0;
  for (const auto& s : samples) {
    if (s.name == kEventsOut && s.Label("kind") == "sink") total += s.value;
  }
  return total;
}

double MedianOf(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

Result<SloMetric> ParseSloMetric(const std::string& name) {
  SloMetric m;
  m.name = name;
  if (name == "throughput_eps") {
    m.latency = false;
    m.higher_is_better = true;
    return m;
  }
  const std::string suffix = "_latency_ms";
  if (name.size() > suffix.size() + 1 && name[0] == 'p' &&
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
    std::string digits = name.substr(1, name.size() - suffix.size() - 1);
    if (digits == "999") digits = "99.9";
    char* end = nullptr;
    double pct = std::strtod(digits.c_str(), &end);
    if (end == digits.c_str() + digits.size() && pct > 0 && pct < 100) {
      m.quantile = pct / 100;
      return m;
    }
  }
  return Status(StatusCode::kInvalidArgument,
                fmt::format("unknown metric \"{}\": expected pNN_latency_ms (e.g. p95_latency_ms, "
                            "p99.9_latency_ms) or throughput_eps",
                            name));
}

double HistogramQuantile(double q, const std::vector<std::pair<double, double>>& buckets) {
  if (buckets.empty() || buckets.back().second <= 0) return NAN;
  const double total = buckets.back().second;
  const double rank = q * total;
  double lower = 0, below = 0;
  for (size_t i = 0; i < buckets.size(); ++i) {
    const auto [upper, cumulative] = buckets[i];
    if (cumulative >= rank) {
      if (std::isinf(upper)) return lower;  // in the +Inf bucket: the highest finite bound
      if (cumulative == below) return upper;
      return lower + (upper - lower) * (rank - below) / (cumulative - below);
    }
    lower = upper;
    below = cumulative;
  }
  return lower;
}

Result<double> FigureFromScrapes(const SloMetric& metric, const std::vector<Sample>& before,
                                 const std::vector<Sample>& after, double window_s) {
  if (!metric.latency) {
    if (window_s <= 0 || before.empty()) {
      return Status(StatusCode::kInvalidArgument, "throughput_eps needs a --window above 0");
    }
    return (SinkEventsOut(after) - SinkEventsOut(before)) / window_s;
  }
  std::map<double, double> end = LatencyBuckets(after);
  if (end.empty()) {
    return Status(StatusCode::kNotFound,
                  "no seedance_event_latency_seconds histogram in the scrape (is it a seedance "
                  "/metrics endpoint with a sink?)");
  }
  std::map<double, double> start = LatencyBuckets(before);
  std::vector<std::pair<double, double>> window;
  for (const auto& [le, count] : end) {
    auto it = start.find(le);
    // A counter that went down means a restart in between: take the later value whole.
    double delta = it == start.end() || it->second > count ? count : count - it->second;
    window.emplace_back(le, delta);
  }
  double q = HistogramQuantile(metric.quantile, window);
  if (std::isnan(q)) {
    return Status(StatusCode::kNotFound, "no events were delivered in the window");
  }
  return q * 1000;
}

Result<double> FigureFromReport(const SloMetric& metric, const std::string& report_json,
                                double window_s, std::string* how) {
  rapidjson::Document doc;
  doc.Parse(report_json.c_str(), report_json.size());
  if (doc.HasParseError() || !doc.IsObject() || !doc.HasMember("runs") || !doc["runs"].IsArray() ||
      doc["runs"].Empty() || !doc.HasMember("latency_bucket_bounds_ms")) {
    return Status(StatusCode::kInvalidArgument, "not a seedance bench report");
  }
  std::vector<double> bounds;
  for (const auto& b : doc["latency_bucket_bounds_ms"].GetArray()) bounds.push_back(b.GetDouble());
  bounds.push_back(INFINITY);
  std::vector<double> per_run;
  bool whole = true;
  for (const auto& run : doc["runs"].GetArray()) {
    const auto& timeline = run["timeline"].GetArray();
    if (timeline.Empty()) continue;
    const double end_t = timeline[timeline.Size() - 1]["t_s"].GetDouble();
    const bool covers = window_s <= 0 || window_s >= end_t;
    const double from_t = covers ? -1 : end_t - window_s;
    if (covers) {
      const char* exact = !metric.latency           ? "throughput_eps"
                          : metric.quantile == 0.5  ? "p50"
                          : metric.quantile == 0.95 ? "p95"
                          : metric.quantile == 0.99 ? "p99"
                                                    : nullptr;
      if (exact != nullptr) {
        per_run.push_back(metric.latency ? run["latency_ms"][exact].GetDouble()
                                         : run[exact].GetDouble());
        continue;
      }
    } else {
      whole = false;
    }
    if (!metric.latency) {
      double out_start = 0, t_start = 0;
      for (const auto& p : timeline) {
        if (p["t_s"].GetDouble() <= from_t) {
          out_start = p["events_out"].GetDouble();
          t_start = p["t_s"].GetDouble();
        }
      }
      const auto& last = timeline[timeline.Size() - 1];
      per_run.push_back((last["events_out"].GetDouble() - out_start) /
                        std::max(1e-9, end_t - t_start));
      continue;
    }
    std::vector<double> counts(bounds.size(), 0);
    for (const auto& p : timeline) {
      if (p["t_s"].GetDouble() <= from_t) continue;
      const auto& b = p["latency_buckets"].GetArray();
      for (rapidjson::SizeType i = 0; i < b.Size() && i < counts.size(); ++i) {
        counts[i] += b[i].GetDouble();
      }
    }
    std::vector<std::pair<double, double>> cumulative;
    double sum = 0;
    for (size_t i = 0; i < bounds.size(); ++i) cumulative.emplace_back(bounds[i], sum += counts[i]);
    double q = HistogramQuantile(metric.quantile, cumulative);
    if (!std::isnan(q)) per_run.push_back(q);
  }
  if (per_run.empty()) {
    return Status(StatusCode::kNotFound, "the report has no deliveries in the window");
  }
  *how = fmt::format("{} of {} run(s){}", whole ? "whole run" : "last window", per_run.size(),
                     per_run.size() > 1 ? ", median" : "");
  return MedianOf(per_run);
}

bool MeetsObjective(const SloMetric& metric, double value, double objective) {
  return metric.higher_is_better ? value >= objective : value <= objective;
}

std::string PushgatewayBody(const SloMetric& metric, double value, double objective,
                            double window_s) {
  const std::string labels = fmt::format("metric=\"{}\"", metric.name);
  return fmt::format(
      "# TYPE seedance_slo_value gauge\n"
      "seedance_slo_value{{{0}}} {1}\n"
      "# TYPE seedance_slo_objective gauge\n"
      "seedance_slo_objective{{{0}}} {2}\n"
      "# TYPE seedance_slo_window_seconds gauge\n"
      "seedance_slo_window_seconds{{{0}}} {3}\n"
      "# TYPE seedance_slo_ok gauge\n"
      "seedance_slo_ok{{{0}}} {4}\n",
      labels, value, objective, window_s, MeetsObjective(metric, value, objective) ? 1 : 0);
}

}  // namespace seedance::slo
