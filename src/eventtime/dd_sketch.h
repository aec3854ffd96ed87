// DDSketch (Masson, Rim, Lee; VLDB 2019): quantiles with a relative-error guarantee. Every
// quantile estimate x̂ of the true value x satisfies |x̂ − x| ≤ α·|x| (α = 1% here), for any
// distribution, with values bucketed by ⌈log_γ |x|⌉, γ = (1 + α) / (1 − α). Negative values
// have their own buckets; |x| < 1e-9 counts as zero. Mergeable and compact: one (index,
// count) pair per occupied bucket (a 20–30 °C range at 1% is about 20 buckets).
//
// Written here: no Debian package provides a C++ quantile sketch.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace seedance::eventtime {

class DDSketch {
 public:
  static constexpr double kRelativeAccuracy = 0.01;

  void Add(double value);
  // The value at rank ⌊q·(n − 1)⌋ of the sorted values, within the relative error; 0 when empty.
  double Quantile(double q) const;
  uint64_t count() const { return count_; }
  size_t bytes() const;

  void AppendTo(std::string& out) const;
  // Reads what AppendTo wrote from the front of `in`, consuming it. False when malformed.
  bool ReadFrom(std::string_view& in);

 private:
  using Buckets = std::vector<std::pair<int32_t, uint32_t>>;  // sorted by index
  static void Increment(Buckets& buckets, int32_t index);
  static int32_t Index(double magnitude);
  static double Value(int32_t index);

  Buckets positive_;
  Buckets negative_;  // by index of |value|
  uint64_t zero_ = 0;
  uint64_t count_ = 0;
};

}  // namespace seedance::eventtime
