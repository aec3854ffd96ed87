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

// A window's checkpoint entry name: "w:" key '\0' start (8 bytes, little-endian). The start
// is read from the end, so a key may hold any byte.
constexpr size_t kWindowNameTail = 1 + sizeof(int64_t);

void SetWindowEntryName(std::string& out, std::string_view key, int64_t start) {
  out.assign("w:");
  out.append(key);
  out.push_back('\0');
  PutRaw<int64_t>(out, start);
}

void AppendWindow(std::string& out, const WindowAggregate& w) {
  PutRaw<uint64_t>(out, w.count);
  PutRaw<double>(out, w.sum);
  PutRaw<double>(out, w.min);
  PutRaw<double>(out, w.max);
  PutRaw<uint32_t>(out, w.emissions);
  w.sketch.AppendTo(out);
}

bool ReadWindow(std::string_view& in, WindowAggregate* w) {
  return ReadRaw(in, &w->count) && ReadRaw(in, &w->sum) && ReadRaw(in, &w->min) &&
         ReadRaw(in, &w->max) && ReadRaw(in, &w->emissions) && w->sketch.ReadFrom(in);
}

}  // namespace

void WindowStore::MarkChanged(Changes& c, int64_t start, WindowAggregate* w) {
  if (w != nullptr) {
    if (w->unsaved) return;  // already listed
    w->unsaved = true;
  }
  c.windows.push_back(start);
}

void WindowStore::Fire(const std::string& key, int64_t start, WindowAggregate& w,
                       const Emit& emit) {
  emit(WindowResult{key, start, start + spec_.size_ns, &w, w.emissions});
  ++w.emissions;
  MarkChanged(changes_[key], start, &w);
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
  Changes* changes = nullptr;
  for (int64_t s = last_start; s > t - spec_.size_ns; s -= spec_.slide_ns) {
    const int64_t end = s + spec_.size_ns;
    if (watermark != kNoWatermark && end + spec_.allowed_lateness_ns <= watermark) continue;
    if (it == keys_.end()) it = keys_.emplace(key, KeyState{}).first;
    if (changes == nullptr) changes = &changes_[key];
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
    MarkChanged(*changes, s, &w);
    const bool due = watermark != kNoWatermark && end <= watermark;
    if (created) {
      purge_.emplace(end + spec_.allowed_lateness_ns, key, s);
      if (!due) fire_.emplace(end, key, s);
    }
    if (due) Fire(key, s, w, emit);  // late but within lateness: emit the update now
  }
  if (taken) it->second.last_seen_ns = now_ns;
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
      MarkGone(key, w->first);
      w = k.windows.erase(w);
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
    changes_[it->first].watermark = true;
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
    if (it->second.windows.erase(start) > 0) MarkGone(key, start);
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
  auto it = keys_.find(key);
  if (it == keys_.end()) return;
  Changes& c = changes_[key];
  for (auto& [start, w] : it->second.windows) MarkChanged(c, start, &w);
  if (it->second.watermark != kNoWatermark) c.watermark = true;
  keys_.erase(it);
}

void WindowStore::SetSpec(const WindowSpec& spec) {
  if (spec.size_ns != spec_.size_ns || spec.slide_ns != spec_.slide_ns) {
    while (!keys_.empty()) EraseKey(keys_.begin()->first);
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
  for (const auto& key : old_form_keys_) sink("k:" + key, "");
  old_form_keys_.clear();
  std::string name, value;
  for (auto& [key, c] : changes_) {
    auto it = keys_.find(key);
    std::sort(c.windows.begin(), c.windows.end());
    c.windows.erase(std::unique(c.windows.begin(), c.windows.end()), c.windows.end());
    for (int64_t start : c.windows) {
      SetWindowEntryName(name, key, start);
      value.clear();
      if (it != keys_.end()) {
        if (auto w = it->second.windows.find(start); w != it->second.windows.end()) {
          w->second.unsaved = false;
          AppendWindow(value, w->second);
        }
      }
      sink(name, value);  // empty: gone
    }
    if (c.watermark) {
      value.clear();
      if (it != keys_.end() && it->second.watermark != kNoWatermark) {
        PutRaw<int64_t>(value, it->second.watermark);
      }
      sink("m:" + key, value);
    }
  }
  changes_.clear();
  if (stream_dirty_) {
    value.clear();
    PutRaw<int64_t>(value, stream_watermark_);
    sink("stream", value);
    stream_dirty_ = false;
  }
}

WindowStore::KeyState& WindowStore::RestoredKey(const std::string& key, int64_t now_ns) {
  auto [it, created] = keys_.try_emplace(key);
  if (created) it->second.last_seen_ns = now_ns;  // its TTL counts from the restart
  return it->second;
}

Status WindowStore::RestoreWindow(const std::string& key, int64_t start, std::string_view& value,
                                  int64_t now_ns) {
  WindowAggregate w;
  if (!ReadWindow(value, &w)) {
    return Status(StatusCode::kInvalidArgument, "bad window checkpoint entry");
  }
  const bool fired = w.emissions > 0;
  if (!RestoredKey(key, now_ns).windows.try_emplace(start, std::move(w)).second) {
    return Status(StatusCode::kInvalidArgument, "window checkpoint entry restored twice");
  }
  purge_.emplace(start + spec_.size_ns + spec_.allowed_lateness_ns, key, start);
  if (!fired) fire_.emplace(start + spec_.size_ns, key, start);
  return Status::Ok();
}

Status WindowStore::RestoreState(std::string_view key, std::string_view value, int64_t now_ns) {
  const Status bad(StatusCode::kInvalidArgument, "bad window checkpoint entry");
  if (key == "stream") {
    return ReadRaw(value, &stream_watermark_) ? Status::Ok() : bad;
  }
  const std::string_view form = key.substr(0, 2);
  if (form == "w:") {
    if (key.size() < 2 + kWindowNameTail || key[key.size() - kWindowNameTail] != '\0') return bad;
    std::string_view tail = key.substr(key.size() - sizeof(int64_t));
    int64_t start = 0;
    ReadRaw(tail, &start);
    return RestoreWindow(std::string(key.substr(2, key.size() - 2 - kWindowNameTail)), start, value,
                         now_ns);
  }
  const std::string name(key.substr(2));
  if (form == "m:")
    return ReadRaw(value, &RestoredKey(name, now_ns).watermark) ? Status::Ok() : bad;
  if (form != "k:") return bad;
  // The form used before: the key's watermark and all its windows in one entry.
  int64_t watermark = kNoWatermark;
  uint32_t n = 0;
  if (!ReadRaw(value, &watermark) || !ReadRaw(value, &n)) return bad;
  for (uint32_t i = 0; i < n; ++i) {
    int64_t start = 0;
    if (!ReadRaw(value, &start)) return bad;
    SEEDANCE_RETURN_IF_ERROR(RestoreWindow(name, start, value, now_ns));
  }
  KeyState& k = RestoredKey(name, now_ns);
  k.watermark = watermark;
  // Rewritten in entries of their own at the next take, and this one deleted with them.
  old_form_keys_.push_back(name);
  Changes& c = changes_[name];
  for (auto& [start, w] : k.windows) MarkChanged(c, start, &w);
  c.watermark = true;
  return Status::Ok();
}

}  // namespace seedance::eventtime
