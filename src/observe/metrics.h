// Metrics: counters, gauges and histograms with labels, rendered in the Prometheus text
// exposition format (version 0.0.4).
//
// Thread-safety: Get*() may be called from any thread (they lock); the returned metric
// objects are updated lock-free and live as long as the registry.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace seedance::observe {

using Labels = std::vector<std::pair<std::string, std::string>>;

class Counter {
 public:
  void Add(uint64_t n = 1) { v_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t Value() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> v_{0};
};

class Gauge {
 public:
  void Set(int64_t v) { v_.store(v, std::memory_order_relaxed); }
  void Add(int64_t d) { v_.fetch_add(d, std::memory_order_relaxed); }
  int64_t Value() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> v_{0};
};

// A gauge with a fractional value (e.g. seconds).
class FloatGauge {
 public:
  void Set(double v) { v_.store(v, std::memory_order_relaxed); }
  double Value() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> v_{0};
};

// Cumulative histogram over fixed upper bounds (seconds).
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void Observe(double value);
  const std::vector<double>& bounds() const { return bounds_; }
  // Per-bucket (non-cumulative) counts; the last one is +Inf.
  std::vector<uint64_t> BucketCounts() const;
  uint64_t Count() const { return count_.load(std::memory_order_relaxed); }
  double Sum() const;

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> sum_micro_{0};  // sum in millionths, so it can be atomic
};

// Latency buckets from 100 µs to 10 s.
std::vector<double> LatencyBuckets();

class MetricsRegistry {
 public:
  Counter& GetCounter(const std::string& name, const std::string& help, const Labels& labels);
  Gauge& GetGauge(const std::string& name, const std::string& help, const Labels& labels);
  FloatGauge& GetFloatGauge(const std::string& name, const std::string& help, const Labels& labels);
  Histogram& GetHistogram(const std::string& name, const std::string& help, const Labels& labels);
  // Prometheus text format, families sorted by name.
  std::string RenderPrometheus() const;

 private:
  enum class Kind { kCounter, kGauge, kFloatGauge, kHistogram };
  struct Family {
    Kind kind;
    std::string help;
    std::map<Labels, size_t> series;  // labels → index into the storage deque
  };
  Family& FamilyFor(const std::string& name, const std::string& help, Kind kind);

  mutable std::mutex mu_;
  std::map<std::string, Family> families_;
  std::deque<Counter> counters_;
  std::deque<Gauge> gauges_;
  std::deque<FloatGauge> float_gauges_;
  std::deque<Histogram> histograms_;
};

}  // namespace seedance::observe
