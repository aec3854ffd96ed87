#include "observe/tap_hub.h"

#include <fmt/format.h>

#include <algorithm>

#include "util/strings.h"
#include "util/topic_filter.h"

namespace seedance::observe {

std::string_view TapPointName(TapPoint point) {
  switch (point) {
    case TapPoint::kSource:
      return "source";
    case TapPoint::kProcessor:
      return "processor";
    case TapPoint::kOutput:
      return "output";
    case TapPoint::kSink:
      return "sink";
  }
  return "?";
}

bool Tap::Wants(TapPoint point, std::string_view name, const Event& event) const {
  const auto& f = filter_;
  const bool all = f.components.empty() && f.outputs.empty();
  if (!all) {
    const auto& names = point == TapPoint::kOutput ? f.outputs : f.components;
    if (std::find(names.begin(), names.end(), name) == names.end()) return false;
  }
  return f.topic.empty() || util::TopicMatches(f.topic, event.topic);
}

bool Tap::Admit() {
  std::lock_guard<std::mutex> lock(mu_);
  if (ended_) return false;
  return seen_++ % filter_.sample == 0;
}

void Tap::Push(std::string_view line) {
  std::lock_guard<std::mutex> lock(mu_);
  if (ended_) return;
  if (bytes_ + line.size() > ring_bytes_) {
    ++dropped_since_;
    ++dropped_total_;
    dropped_.Add();
    return;
  }
  lines_.emplace_back(line);
  bytes_ += line.size();
  events_.Add();
  if (filter_.limit != 0 && ++queued_ >= filter_.limit) ended_ = true;
}

bool Tap::Take(std::string& out, size_t max_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t taken = 0;
  while (!lines_.empty() && (taken == 0 || taken + lines_.front().size() <= max_bytes)) {
    out += lines_.front();
    taken += lines_.front().size();
    bytes_ -= lines_.front().size();
    lines_.pop_front();
  }
  if (dropped_since_ != 0) {
    out += fmt::format("{{\"dropped\":{},\"dropped_total\":{}}}\n", dropped_since_, dropped_total_);
    dropped_since_ = 0;
  }
  return ended_ && lines_.empty();
}

void Tap::End() {
  std::lock_guard<std::mutex> lock(mu_);
  ended_ = true;
}

size_t Tap::waiting_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

uint64_t Tap::dropped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_total_;
}

TapHub::TapHub(MetricsRegistry& metrics, Encode encode, size_t max_taps, size_t ring_bytes)
    : metrics_(metrics),
      encode_(std::move(encode)),
      ring_bytes_(ring_bytes),
      open_gauge_(metrics.GetGauge("seedance_taps_open", "Taps open (seedance tap).", {})),
      refused_(metrics.GetCounter("seedance_taps_refused_total",
                                  "Taps refused because the most allowed were open.", {})),
      slots_(max_taps) {}

void TapHub::Offer(TapPoint point, std::string_view name, const Event& event) {
  std::string line;  // encoded once, for every tap that wants it
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& tap : slots_) {
    if (tap == nullptr || !tap->Wants(point, name, event) || !tap->Admit()) continue;
    if (line.empty()) {
      line = "{\"point\":\"";
      line += TapPointName(point);
      line += point == TapPoint::kOutput ? "\",\"output\":" : "\",\"component\":";
      util::AppendJsonString(line, name);
      line += ",\"event\":";
      encode_(event, line);
      line += "}\n";
    }
    tap->Push(line);
  }
}

Result<std::shared_ptr<Tap>> TapHub::Open(TapFilter filter) {
  if (!filter.topic.empty()) {
    Status s = util::ValidateTopicFilter(filter.topic);
    if (!s.ok()) return InvalidArgumentError("topic: " + s.message());
  }
  if (filter.sample == 0) return InvalidArgumentError("sample: must be at least 1");
  std::lock_guard<std::mutex> lock(mu_);
  auto free = std::find(slots_.begin(), slots_.end(), nullptr);
  if (free == slots_.end()) {
    refused_.Add();
    return ResourceExhaustedError(
        fmt::format("{} taps are open, the most there may be; close one first", slots_.size()));
  }
  const size_t slot = static_cast<size_t>(free - slots_.begin());
  const Labels labels{{"slot", std::to_string(slot)}};
  *free = std::make_shared<Tap>(
      slot, std::move(filter), ring_bytes_,
      metrics_.GetCounter("seedance_tap_events_total", "Events a tap passed to its client.",
                          labels),
      metrics_.GetCounter("seedance_tap_dropped_total",
                          "Events a tap dropped because its client read too slowly.", labels));
  open_.fetch_add(1, std::memory_order_relaxed);
  open_gauge_.Add(1);
  return *free;
}

void TapHub::Close(const std::shared_ptr<Tap>& tap) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = std::find(slots_.begin(), slots_.end(), tap);
  if (it == slots_.end()) return;
  it->reset();
  open_.fetch_sub(1, std::memory_order_relaxed);
  open_gauge_.Add(-1);
}

void TapHub::EndAll() {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& tap : slots_) {
    if (tap != nullptr) tap->End();
  }
}

}  // namespace seedance::observe
