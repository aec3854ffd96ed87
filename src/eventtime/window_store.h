// WindowStore: keyed tumbling or sliding event-time windows and their aggregates.
//
// Windows are aligned to the Unix epoch: [k·slide, k·slide + size). A window fires (is
// emitted) when the watermark passes its end; an event arriving later but within the allowed
// lateness updates it and it is emitted again (`update` counts the re-emissions); once the
// watermark passes end + allowed lateness the window is closed and forgotten, and an event
// for it is stale. Keys with no event for the state TTL are flushed (unfired windows fire)
// and dropped.
//
// Not thread-safe: the processing thread owns it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "eventtime/dd_sketch.h"
#include "eventtime/watermark_tracker.h"
#include "seedance/status.h"

namespace seedance::eventtime {

struct WindowSpec {
  int64_t size_ns = 60'000'000'000;
  int64_t slide_ns = 60'000'000'000;  // == size: tumbling
  int64_t allowed_lateness_ns = 300'000'000'000;
  bool operator==(const WindowSpec&) const = default;
};

struct WindowAggregate {
  uint64_t count = 0;
  double sum = 0;
  double min = 0;
  double max = 0;
  DDSketch sketch;
  uint32_t emissions = 0;
  bool unsaved = false;  // the store's own: changed since its last checkpoint
};

struct WindowResult {
  std::string_view key;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  const WindowAggregate* aggregate = nullptr;
  uint32_t update = 0;  // 0 for the first emission
};

class WindowStore {
 public:
  using Emit = std::function<void(const WindowResult&)>;

  explicit WindowStore(WindowSpec spec) : spec_(spec) {}

  // Whether the windows holding `t`, their ends and their ends + allowed lateness, are Unix
  // ns an int64_t holds (an event time near 2262 or 1678 overflowed them). Add needs it.
  bool Holds(int64_t t) const;
  // How many windows Add(key, t, ...) would open: those holding `t` that are neither closed
  // nor in state yet (0 when it would only update open ones, or the event is stale).
  size_t WindowsToOpen(std::string_view key, int64_t t) const;
  // Adds `value` (or only counts, without `has_value`) at event time `t` for `key`. Returns
  // false, changing nothing, when every window that would hold `t` is already closed.
  bool Add(std::string_view key, int64_t t, double value, bool has_value, int64_t now_ns,
           const Emit& emit);
  // The watermark of `scope` ("" = every key) reached `watermark_ns`.
  void AdvanceWatermark(std::string_view scope, int64_t watermark_ns, const Emit& emit);
  // Flushes and drops keys with no event for `ttl_ns` of wall clock.
  void ExpireIdleKeys(int64_t now_ns, int64_t ttl_ns, const Emit& emit);

  const WindowSpec& spec() const { return spec_; }
  // A new lateness applies at once; a new size or slide drops the open windows' state.
  void SetSpec(const WindowSpec& spec);
  size_t key_count() const { return keys_.size(); }
  bool HasKey(const std::string& key) const { return keys_.count(key) != 0; }
  size_t window_count() const { return purge_.size(); }

  // Checkpoint entries, an empty value deleting one: "w:<key>\0<start>" → one window,
  // "m:<key>" → the key's own watermark, "stream" → the stream's. Only what changed since the
  // last call is taken: the windows an event updated, not every window its key holds (a key
  // keeps a window per slide for `allowed_lateness` after it fired). Entries of the form used
  // before, "k:<key>" → all of a key's windows, are restored, and at the next take rewritten
  // in this one. Until taken, the changes are held (a window start each): the pipeline takes
  // them after every batch.
  void TakeChangedState(const std::function<void(std::string_view, std::string_view)>& sink);
  Status RestoreState(std::string_view key, std::string_view value, int64_t now_ns);

 private:
  struct KeyState {
    std::map<int64_t, WindowAggregate> windows;  // by start
    int64_t watermark = kNoWatermark;            // per-key watermark, if any
    int64_t last_seen_ns = 0;
  };
  using Due = std::tuple<int64_t, std::string, int64_t>;  // (time, key, window start)
  // A key's changes since the last checkpoint.
  struct Changes {
    std::vector<int64_t> windows;  // starts of windows added, updated or gone (may repeat)
    bool watermark = false;        // its own watermark set, or the key gone
  };

  int64_t EffectiveWatermark(const KeyState& k) const {
    return std::max(stream_watermark_, k.watermark);
  }
  void Fire(const std::string& key, int64_t start, WindowAggregate& w, const Emit& emit);
  void FireDue(const std::string& key, KeyState& k, const Emit& emit);
  void EraseKey(const std::string& key);
  static void MarkChanged(Changes& c, int64_t start, WindowAggregate* w);
  void MarkGone(const std::string& key, int64_t start) {
    MarkChanged(changes_[key], start, nullptr);
  }
  // The key `key`, made (seen at `now_ns`) if it is not there yet.
  KeyState& RestoredKey(const std::string& key, int64_t now_ns);
  Status RestoreWindow(const std::string& key, int64_t start, std::string_view& value,
                       int64_t now_ns);

  WindowSpec spec_;
  std::unordered_map<std::string, KeyState> keys_;
  std::set<Due> fire_;   // (end, key, start) of windows not yet emitted
  std::set<Due> purge_;  // (end + lateness, key, start) of every open window
  int64_t stream_watermark_ = kNoWatermark;
  std::unordered_map<std::string, Changes> changes_;
  std::vector<std::string> old_form_keys_;  // "k:" entries restored: deleted at the next take
  bool stream_dirty_ = false;
};

}  // namespace seedance::eventtime
