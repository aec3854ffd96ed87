#include "eventtime/dd_sketch.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "util/little_endian.h"

namespace seedance::eventtime {
namespace {

constexpr double kGamma = (1 + DDSketch::kRelativeAccuracy) / (1 - DDSketch::kRelativeAccuracy);
const double kLogGamma = std::log(kGamma);
constexpr double kZeroBelow = 1e-9;

using util::PutRaw;
using util::ReadRaw;

}  // namespace

int32_t DDSketch::Index(double magnitude) {
  return static_cast<int32_t>(std::ceil(std::log(magnitude) / kLogGamma));
}

double DDSketch::Value(int32_t index) { return 2 * std::pow(kGamma, index) / (kGamma + 1); }

void DDSketch::Increment(Buckets& buckets, int32_t index) {
  auto it = std::lower_bound(buckets.begin(), buckets.end(), index,
                             [](const auto& b, int32_t i) { return b.first < i; });
  if (it != buckets.end() && it->first == index) {
    ++it->second;
  } else {
    buckets.insert(it, {index, 1});
  }
}

void DDSketch::Add(double value) {
  if (!std::isfinite(value)) return;
  ++count_;
  if (value > kZeroBelow) {
    Increment(positive_, Index(value));
  } else if (value < -kZeroBelow) {
    Increment(negative_, Index(-value));
  } else {
    ++zero_;
  }
}

double DDSketch::Quantile(double q) const {
  if (count_ == 0) return 0;
  const double rank = std::floor(std::clamp(q, 0.0, 1.0) * static_cast<double>(count_ - 1));
  double seen = 0;
  // Ascending values: negatives from the largest magnitude down, zero, positives upwards.
  for (auto it = negative_.rbegin(); it != negative_.rend(); ++it) {
    seen += it->second;
    if (seen > rank) return -Value(it->first);
  }
  seen += static_cast<double>(zero_);
  if (seen > rank) return 0;
  for (const auto& [index, n] : positive_) {
    seen += n;
    if (seen > rank) return Value(index);
  }
  return positive_.empty() ? 0 : Value(positive_.back().first);
}

size_t DDSketch::bytes() const {
  return sizeof(*this) +
         (positive_.capacity() + negative_.capacity()) * sizeof(Buckets::value_type);
}

void DDSketch::AppendTo(std::string& out) const {
  PutRaw<uint64_t>(out, zero_);
  PutRaw<uint32_t>(out, static_cast<uint32_t>(positive_.size()));
  PutRaw<uint32_t>(out, static_cast<uint32_t>(negative_.size()));
  for (const auto& [i, n] : positive_) {
    PutRaw(out, i);
    PutRaw(out, n);
  }
  for (const auto& [i, n] : negative_) {
    PutRaw(out, i);
    PutRaw(out, n);
  }
}

bool DDSketch::ReadFrom(std::string_view& in) {
  uint32_t np = 0, nn = 0;
  if (!ReadRaw(in, &zero_) || !ReadRaw(in, &np) || !ReadRaw(in, &nn) ||
      in.size() < (np + nn) * 8ull) {
    return false;
  }
  count_ = zero_;
  positive_.resize(np);
  negative_.resize(nn);
  for (auto* buckets : {&positive_, &negative_}) {
    for (auto& [i, n] : *buckets) {
      ReadRaw(in, &i);
      ReadRaw(in, &n);
      count_ += n;
    }
  }
  return true;
}

}  // namespace seedance::eventtime
