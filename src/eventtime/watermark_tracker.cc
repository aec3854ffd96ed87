#include "eventtime/watermark_tracker.h"

#include <algorithm>
#include <cstring>

#include "util/little_endian.h"

namespace seedance::eventtime {
namespace {

void PutI64(std::string& out, int64_t v) { util::PutRaw(out, v); }
int64_t GetI64(std::string_view in, size_t pos) {
  return static_cast<int64_t>(util::GetFixed64(in.data() + pos));
}

}  // namespace

const std::string& WatermarkTracker::ScopeKey(std::string_view scope_id) const {
  static const std::string kStream;
  if (options_.scope == WatermarkOptions::Scope::kStream) return kStream;
  const_cast<std::string&>(scope_buffer_).assign(scope_id);
  return scope_buffer_;
}

void WatermarkTracker::Raise(const std::string& scope, ScopeState& s, int64_t watermark) {
  if (watermark <= s.watermark) return;
  s.watermark = watermark;
  dirty_.insert(scope);
  if (options_.scope == WatermarkOptions::Scope::kKey) advanced_keys_.insert(scope);
}

void WatermarkTracker::RecomputeStream(int64_t now_ns) {
  if (options_.scope == WatermarkOptions::Scope::kKey) return;
  int64_t lowest = std::numeric_limits<int64_t>::max();
  bool any = false;
  for (const auto& [name, s] : scopes_) {
    if (s.watermark == kNoWatermark) continue;
    const bool idle = now_ns - s.last_seen_ns >= options_.idle_timeout_ns;
    if (idle && scopes_.size() > 1) continue;  // an idle source does not hold the others back
    lowest = std::min(lowest, s.watermark);
    any = true;
  }
  if (!any) {  // every source idle: the most advanced one leads
    for (const auto& [name, s] : scopes_) {
      if (s.watermark != kNoWatermark) lowest = any ? std::max(lowest, s.watermark) : s.watermark;
      any = any || s.watermark != kNoWatermark;
    }
  }
  if (any && lowest > stream_watermark_) {
    stream_watermark_ = lowest;
    stream_advanced_ = true;
    stream_dirty_ = true;
  }
}

WatermarkTracker::Verdict WatermarkTracker::Observe(std::string_view scope_id, int64_t event_ns,
                                                    int64_t now_ns) {
  const std::string& key = ScopeKey(scope_id);
  auto it = scopes_.find(key);
  if (it == scopes_.end()) it = scopes_.emplace(key, ScopeState{}).first;
  ScopeState& s = it->second;
  Verdict v;
  v.watermark = options_.scope == WatermarkOptions::Scope::kKey ? s.watermark : stream_watermark_;
  if (v.watermark != kNoWatermark && event_ns < v.watermark - options_.allowed_lateness_ns) {
    v.stale = true;
    v.lateness_ns = v.watermark - event_ns;
    return v;  // a stale event moves nothing
  }
  if (v.watermark != kNoWatermark && event_ns < v.watermark) v.lateness_ns = v.watermark - event_ns;
  s.last_seen_ns = now_ns;
  if (event_ns > s.max_event_ns) {
    s.max_event_ns = event_ns;
    dirty_.insert(key);
    Raise(key, s, event_ns - options_.max_out_of_order_ns);
  }
  RecomputeStream(now_ns);
  return v;
}

void WatermarkTracker::Tick(int64_t now_ns) {
  const int64_t idle_watermark = now_ns - options_.idle_timeout_ns - options_.max_out_of_order_ns;
  for (auto& [name, s] : scopes_) {
    if (s.watermark != kNoWatermark && now_ns - s.last_seen_ns >= options_.idle_timeout_ns) {
      Raise(name, s, idle_watermark);
    }
  }
  RecomputeStream(now_ns);
}

void WatermarkTracker::ForgetIdleKeys(int64_t now_ns, int64_t ttl_ns) {
  if (options_.scope != WatermarkOptions::Scope::kKey) return;
  for (auto it = scopes_.begin(); it != scopes_.end();) {
    if (now_ns - it->second.last_seen_ns < ttl_ns) {
      ++it;
      continue;
    }
    dirty_.insert(it->first);  // written as deleted
    advanced_keys_.erase(it->first);
    it = scopes_.erase(it);
  }
}

void WatermarkTracker::TakeAdvances(const std::function<void(std::string_view, int64_t)>& advance) {
  if (options_.scope == WatermarkOptions::Scope::kKey) {
    for (const auto& key : advanced_keys_) {
      auto it = scopes_.find(key);
      if (it != scopes_.end()) advance(key, it->second.watermark);
    }
    advanced_keys_.clear();
  } else if (stream_advanced_) {
    advance("", stream_watermark_);
  }
  stream_advanced_ = false;
}

int64_t WatermarkTracker::Watermark(std::string_view scope_id) const {
  if (options_.scope != WatermarkOptions::Scope::kKey) return stream_watermark_;
  auto it = scopes_.find(std::string(scope_id));
  return it == scopes_.end() ? kNoWatermark : it->second.watermark;
}

void WatermarkTracker::TakeChangedState(
    const std::function<void(std::string_view, std::string_view)>& sink) {
  std::string value;
  for (const auto& name : dirty_) {
    auto it = scopes_.find(name);
    if (it == scopes_.end()) {  // forgotten
      sink("s:" + name, std::string_view());
      continue;
    }
    value.clear();
    PutI64(value, it->second.max_event_ns);
    PutI64(value, it->second.watermark);
    sink("s:" + name, value);
  }
  dirty_.clear();
  if (stream_dirty_) {
    value.clear();
    PutI64(value, stream_watermark_);
    sink("stream", value);
    stream_dirty_ = false;
  }
}

Status WatermarkTracker::RestoreState(std::string_view key, std::string_view value,
                                      int64_t now_ns) {
  if (key == "stream" && value.size() == 8) {
    stream_watermark_ = GetI64(value, 0);
    return Status::Ok();
  }
  if (key.substr(0, 2) == "s:" && value.size() == 16) {
    ScopeState& s = scopes_[std::string(key.substr(2))];
    s.max_event_ns = GetI64(value, 0);
    s.watermark = GetI64(value, 8);
    s.last_seen_ns = now_ns;
    return Status::Ok();
  }
  return Status(StatusCode::kInvalidArgument, "bad watermark checkpoint entry");
}

}  // namespace seedance::eventtime
