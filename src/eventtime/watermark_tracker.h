// WatermarkTracker: bounded out-of-orderness watermarks and the stale classification.
//
// The watermark of a scope is (max event time seen) − max_out_of_order and never goes back.
// An event is stale when its time is older than watermark − allowed_lateness, judged against
// the watermark before the event. Scopes:
//   stream  one watermark for everything (default);
//   source  one per source; the stream's watermark is the minimum over sources that have
//           reported and are not idle, so a silent source does not hold the others back;
//   key     one per key; each key's windows follow its own watermark.
// A scope with no event for idle_timeout (wall clock) advances with the wall clock as if it
// were still reporting (now − idle_timeout − max_out_of_order), so idle input never stalls
// windows forever.
//
// Not thread-safe: the processing thread owns it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "seedance/status.h"

namespace seedance::eventtime {

inline constexpr int64_t kNoWatermark = std::numeric_limits<int64_t>::min();

struct WatermarkOptions {
  enum class Scope { kStream, kSource, kKey } scope = Scope::kStream;
  int64_t max_out_of_order_ns = 0;
  int64_t allowed_lateness_ns = 300'000'000'000;  // 5 min
  int64_t idle_timeout_ns = 30'000'000'000;       // 30 s
};

class WatermarkTracker {
 public:
  explicit WatermarkTracker(WatermarkOptions options) : options_(options) {}

  struct Verdict {
    bool stale = false;
    int64_t watermark = kNoWatermark;  // the watermark the event was judged against
    int64_t lateness_ns = 0;           // watermark − event time, when positive
  };
  // Judges an event of `scope_id` (source name or key; ignored for stream scope) and records it.
  Verdict Observe(std::string_view scope_id, int64_t event_ns, int64_t now_ns);
  // Advances idle scopes by the wall clock.
  void Tick(int64_t now_ns);
  // Key scope: forgets the keys with no event for `ttl_ns` of wall clock (a key seen again
  // starts afresh); their checkpoint entries are deleted with the next changes.
  void ForgetIdleKeys(int64_t now_ns, int64_t ttl_ns);
  // Scopes held (keys, for key scope).
  size_t scope_count() const { return scopes_.size(); }
  bool HasScope(const std::string& scope_id) const { return scopes_.count(scope_id) != 0; }
  // Calls `advance(scope, watermark)` for every watermark that moved since the previous call:
  // scope "" for stream and source scopes, the key for key scope.
  void TakeAdvances(const std::function<void(std::string_view, int64_t)>& advance);

  // The stream's watermark (stream and source scopes) or a key's (key scope).
  int64_t Watermark(std::string_view scope_id = {}) const;
  const WatermarkOptions& options() const { return options_; }
  void set_options(const WatermarkOptions& options) { options_ = options; }

  // Checkpoint: entries changed since the previous call ("s:<scope>" → max event time and
  // watermark, empty once forgotten; "stream" → the stream's watermark).
  void TakeChangedState(const std::function<void(std::string_view, std::string_view)>& sink);
  Status RestoreState(std::string_view key, std::string_view value, int64_t now_ns);

 private:
  struct ScopeState {
    int64_t max_event_ns = kNoWatermark;
    int64_t watermark = kNoWatermark;
    int64_t last_seen_ns = 0;  // wall clock
  };
  const std::string& ScopeKey(std::string_view scope_id) const;
  void Raise(const std::string& scope, ScopeState& s, int64_t watermark);
  void RecomputeStream(int64_t now_ns);

  WatermarkOptions options_;
  std::unordered_map<std::string, ScopeState> scopes_;
  int64_t stream_watermark_ = kNoWatermark;  // stream and source scopes
  bool stream_advanced_ = false;
  std::unordered_set<std::string> advanced_keys_;  // key scope
  std::unordered_set<std::string> dirty_;
  bool stream_dirty_ = false;
  std::string scope_buffer_;
};

}  // namespace seedance::eventtime
