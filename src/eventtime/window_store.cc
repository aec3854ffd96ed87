#include "eventtime/window_store.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "util/little_endian.h"

namespace seedance::eventtime {
namespace {

using util::PutRaw;
using util::ReadRaw;

int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

}  // namespace

void WindowStore::Fire(const std::string& key, int64_t start, WindowAggregate& w,
                       const Emit& emit) {
  emit(WindowResult{key, start, start + spec_.size_ns, &w, w.emissions});
  ++w.emissions;
  dirty_.insert(key);
}

bool WindowStore::Holds(int64_t t) const {
  // Add's loop steps one slide below t - size; a window ends at most at t + size.
  const __int128 first = static_cast<__int128>(t) - spec_.size_ns - spec_.slide_ns;
  const __int128 last = static_cast<__int128>(t) + spec_.size_ns + spec_.allowed_lateness_ns;
  return first >= std::numeric_limits<int64_t>::min() &&
         last <= std::numeric_limits<int64_t>::max();
}

size_t WindowStore::WindowsToOpen(std::string_view key_view, int64_t t) const {
  const std::string key(key_view);
  auto it = keys_.find(key);
  const int64_t watermark =
      std::max(stream_watermark_, it == keys_.end() ? kNoWatermark : it->second.watermark);
  size_t n = 0;
  const int64_t last_start = FloorDiv(t, spec_.slide_ns) * spec_.slide_ns;
  for (int64_t s = last_start; s > t - spec_.size_ns; s -= spec_.slide_ns) {  // as Add
    const int64_t end = s + spec_.size_ns;
    if (watermark != kNoWatermark && end + spec_.allowed_lateness_ns <= watermark) continue;
    if (it == keys_.end() || it->second.windows.count(s) == 0) ++n;
  }
  return n;
}

bool WindowStore::Add(std::string_view key_view, int64_t t, double value, bool has_value,
                      int64_t now_ns, const Emit& emit) {
  std::string key(key_view);
  auto it = keys_.find(key);
  const int64_t watermark =
      std::max(stream_watermark_, it == keys_.end() ? kNoWatermark : it->second.watermark);
  // Every window [s, s + size) with s ≤ t < s + size, newest first; open ones take the event.
  const int64_t last_start = FloorDiv(t, spec_.slide_ns) * spec_.slide_ns;
  bool taken = false;
  for (int64_t s = last_start; s > t - spec_.size_ns; s -= spec_.slide_ns) {
    const int64_t end = s + spec_.size_ns;
    if (watermark != kNoWatermark && end + spec_.allowed_lateness_ns <= watermark) continue;
    if (it == keys_.end()) it = keys_.emplace(key, KeyState{}).first;
    KeyState& k = it->second;
    auto [w_it, created] = k.windows.try_emplace(s);
    WindowAggregate& w = w_it->second;
    if (has_value) {
      w.min = w.count == 0 ? value : std::min(w.min, value);
      w.max = w.count == 0 ? value : std::max(w.max, value);
      w.sum += value;
      w.sketch.Add(value);
    }
    ++w.count;
    taken = true;
    const bool due = watermark != kNoWatermark && end <= watermark;
    if (created) {
      purge_.emplace(end + spec_.allowed_lateness_ns, key, s);
      if (!due) fire_.emplace(end, key, s);
    }
    if (due) Fire(key, s, w, emit);  // late but within lateness: emit the update now
  }
  if (taken) {
    it->second.last_seen_ns = now_ns;
    dirty_.insert(key);
  }
  return taken;
}

void WindowStore::FireDue(const std::string& key, KeyState& k, const Emit& emit) {
  const int64_t watermark = EffectiveWatermark(k);
  for (auto w = k.windows.begin(); w != k.windows.end();) {
    const int64_t end = w->first + spec_.size_ns;
    if (end <= watermark && fire_.erase(Due{end, key, w->first}) > 0)
      Fire(key, w->first, w->second, emit);
    if (end + spec_.allowed_lateness_ns <= watermark) {
      purge_.erase(Due{end + spec_.allowed_lateness_ns, key, w->first});
      w = k.windows.erase(w);
      dirty_.insert(key);
    } else {
      ++w;
    }
  }
}

void WindowStore::AdvanceWatermark(std::string_view scope, int64_t watermark_ns, const Emit& emit) {
  if (!scope.empty()) {
    auto it = keys_.find(std::string(scope));
    if (it == keys_.end() || watermark_ns <= it->second.watermark) return;
    it->second.watermark = watermark_ns;
    dirty_.insert(it->first);
    const std::string key = it->first;
    FireDue(key, it->second, emit);
    if (it->second.windows.empty()) EraseKey(key);
    return;
  }
  if (watermark_ns <= stream_watermark_) return;
  stream_watermark_ = watermark_ns;
  stream_dirty_ = true;
  while (!fire_.empty() && std::get<0>(*fire_.begin()) <= watermark_ns) {
    auto node = fire_.extract(fire_.begin());
    const auto& [end, key, start] = node.value();
    Fire(key, start, keys_[key].windows[start], emit);
  }
  while (!purge_.empty() && std::get<0>(*purge_.begin()) <= watermark_ns) {
    auto node = purge_.extract(purge_.begin());
    const auto& [until, key, start] = node.value();
    auto it = keys_.find(key);
    if (it == keys_.end()) continue;
    it->second.windows.erase(start);
    dirty_.insert(key);
    if (it->second.windows.empty()) EraseKey(key);
  }
}

void WindowStore::ExpireIdleKeys(int64_t now_ns, int64_t ttl_ns, const Emit& emit) {
  std::vector<std::string> idle;
  for (const auto& [key, k] : keys_) {
    if (now_ns - k.last_seen_ns >= ttl_ns) idle.push_back(key);
  }
  for (const auto& key : idle) {
    KeyState& k = keys_[key];
    for (auto& [start, w] : k.windows) {
      if (fire_.erase(Due{start + spec_.size_ns, key, start}) > 0) Fire(key, start, w, emit);
      purge_.erase(Due{start + spec_.size_ns + spec_.allowed_lateness_ns, key, start});
    }
    EraseKey(key);
  }
}

void WindowStore::EraseKey(const std::string& key) {
  keys_.erase(key);
  dirty_.insert(key);
}

void WindowStore::SetSpec(const WindowSpec& spec) {
  if (spec.size_ns != spec_.size_ns || spec.slide_ns != spec_.slide_ns) {
    for (const auto& [key, k] : keys_) dirty_.insert(key);
    keys_.clear();
    fire_.clear();
    purge_.clear();
    spec_ = spec;
    return;
  }
  // Same windows, new lateness: re-index the purge times.
  std::set<Due> purge;
  for (const auto& [until, key, start] : purge_) {
    purge.emplace(start + spec.size_ns + spec.allowed_lateness_ns, key, start);
  }
  purge_.swap(purge);
  spec_ = spec;
}

void WindowStore::TakeChangedState(
    const std::function<void(std::string_view, std::string_view)>& sink) {
  std::string value;
  for (const auto& key : dirty_) {
    auto it = keys_.find(key);
    value.clear();
    if (it != keys_.end()) {
      const KeyState& k = it->second;
      PutRaw<int64_t>(value, k.watermark);
      PutRaw<uint32_t>(value, static_cast<uint32_t>(k.windows.size()));
      for (const auto& [start, w] : k.windows) {
        PutRaw<int64_t>(value, start);
        PutRaw<uint64_t>(value, w.count);
        PutRaw<double>(value, w.sum);
        PutRaw<double>(value, w.min);
        PutRaw<double>(value, w.max);
        PutRaw<uint32_t>(value, w.emissions);
        w.sketch.AppendTo(value);
      }
    }
    sink("k:" + key, value);  // empty: deleted
  }
  dirty_.clear();
  if (stream_dirty_) {
    value.clear();
    PutRaw<int64_t>(value, stream_watermark_);
    sink("stream", value);
    stream_dirty_ = false;
  }
}

Status WindowStore::RestoreState(std::string_view key, std::string_view value, int64_t now_ns) {
  const Status bad(StatusCode::kInvalidArgument, "bad window checkpoint entry");
  if (key == "stream") {
    return ReadRaw(value, &stream_watermark_) ? Status::Ok() : bad;
  }
  if (key.substr(0, 2) != "k:") return bad;
  const std::string name(key.substr(2));
  KeyState k;
  k.last_seen_ns = now_ns;
  uint32_t n = 0;
  if (!ReadRaw(value, &k.watermark) || !ReadRaw(value, &n)) return bad;
  for (uint32_t i = 0; i < n; ++i) {
    int64_t start = 0;
    WindowAggregate w;
    if (!ReadRaw(value, &start) || !ReadRaw(value, &w.count) || !ReadRaw(value, &w.sum) ||
        !ReadRaw(value, &w.min) || !ReadRaw(value, &w.max) || !ReadRaw(value, &w.emissions) ||
        !w.sketch.ReadFrom(value)) {
      return bad;
    }
    purge_.emplace(start + spec_.size_ns + spec_.allowed_lateness_ns, name, start);
    if (w.emissions == 0) fire_.emplace(start + spec_.size_ns, name, start);
    k.windows.emplace(start, std::move(w));
  }
  keys_[name] = std::move(k);
  return Status::Ok();
}

}  // namespace seedance::eventtime
