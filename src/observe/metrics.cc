#include "observe/metrics.h"

#include <fmt/format.h>

#include <cmath>

namespace seedance::observe {
namespace {

std::string EscapeLabel(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out.push_back(c);
  }
  return out;
}

std::string LabelText(const Labels& labels, const std::string& extra_name = "",
                      const std::string& extra_value = "") {
  std::string out;
  for (const auto& [k, v] : labels) {
    out += out.empty() ? "{" : ",";
    out += fmt::format("{}=\"{}\"", k, EscapeLabel(v));
  }
  if (!extra_name.empty()) {
    out += out.empty() ? "{" : ",";
    out += fmt::format("{}=\"{}\"", extra_name, extra_value);
  }
  if (!out.empty()) out += "}";
  return out;
}

std::string FormatDouble(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", v);
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), buckets_(new std::atomic<uint64_t>[bounds_.size() + 1]) {
  for (size_t i = 0; i <= bounds_.size(); ++i) buckets_[i].store(0);
}

void Histogram::Observe(double value) {
  size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_micro_.fetch_add(static_cast<uint64_t>(std::llround(std::max(0.0, value) * 1e6)),
                       std::memory_order_relaxed);
}

std::vector<uint64_t> Histogram::BucketCounts() const {
  std::vector<uint64_t> out(bounds_.size() + 1);
  for (size_t i = 0; i <= bounds_.size(); ++i) out[i] = buckets_[i].load(std::memory_order_relaxed);
  return out;
}

double Histogram::Sum() const { return static_cast<double>(sum_micro_.load()) / 1e6; }

std::vector<double> LatencyBuckets() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
          0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10};
}

MetricsRegistry::Family& MetricsRegistry::FamilyFor(const std::string& name,
                                                    const std::string& help, Kind kind) {
  auto [it, inserted] = families_.try_emplace(name, Family{kind, help, {}});
  return it->second;
}

Counter& MetricsRegistry::GetCounter(const std::string& name, const std::string& help,
                                     const Labels& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  Family& f = FamilyFor(name, help, Kind::kCounter);
  auto it = f.series.find(labels);
  if (it != f.series.end()) return counters_[it->second];
  counters_.emplace_back();
  f.series[labels] = counters_.size() - 1;
  return counters_.back();
}

Gauge& MetricsRegistry::GetGauge(const std::string& name, const std::string& help,
                                 const Labels& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  Family& f = FamilyFor(name, help, Kind::kGauge);
  auto it = f.series.find(labels);
  if (it != f.series.end()) return gauges_[it->second];
  gauges_.emplace_back();
  f.series[labels] = gauges_.size() - 1;
  return gauges_.back();
}

FloatGauge& MetricsRegistry::GetFloatGauge(const std::string& name, const std::string& help,
                                           const Labels& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  Family& f = FamilyFor(name, help, Kind::kFloatGauge);
  auto it = f.series.find(labels);
  if (it != f.series.end()) return float_gauges_[it->second];
  float_gauges_.emplace_back();
  f.series[labels] = float_gauges_.size() - 1;
  return float_gauges_.back();
}

Histogram& MetricsRegistry::GetHistogram(const std::string& name, const std::string& help,
                                         const Labels& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  Family& f = FamilyFor(name, help, Kind::kHistogram);
  auto it = f.series.find(labels);
  if (it != f.series.end()) return histograms_[it->second];
  histograms_.emplace_back(LatencyBuckets());
  f.series[labels] = histograms_.size() - 1;
  return histograms_.back();
}

std::string MetricsRegistry::RenderPrometheus() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  for (const auto& [name, f] : families_) {
    const char* type = f.kind == Kind::kCounter     ? "counter"
                       : f.kind == Kind::kHistogram ? "histogram"
                                                    : "gauge";
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, f.help, name, type);
    for (const auto& [labels, index] : f.series) {
      switch (f.kind) {
        case Kind::kCounter:
          out += fmt::format("{}{} {}\n", name, LabelText(labels), counters_[index].Value());
          break;
        case Kind::kGauge:
          out += fmt::format("{}{} {}\n", name, LabelText(labels), gauges_[index].Value());
          break;
        case Kind::kFloatGauge:
          out += fmt::format("{}{} {}\n", name, LabelText(labels),
                             FormatDouble(float_gauges_[index].Value()));
          break;
        case Kind::kHistogram: {
          const Histogram& h = histograms_[index];
          std::vector<uint64_t> counts = h.BucketCounts();
          uint64_t cumulative = 0;
          for (size_t i = 0; i < counts.size(); ++i) {
            cumulative += counts[i];
            double le = i < h.bounds().size() ? h.bounds()[i] : INFINITY;
            out += fmt::format("{}_bucket{} {}\n", name, LabelText(labels, "le", FormatDouble(le)),
                               cumulative);
          }
          out += fmt::format("{}_sum{} {}\n", name, LabelText(labels), FormatDouble(h.Sum()));
          out += fmt::format("{}_count{} {}\n", name, LabelText(labels), cumulative);
          break;
        }
      }
    }
  }
  return out;
}

}  // namespace seedance::observe
