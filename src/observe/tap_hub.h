// TapHub: copies of the events passing named points of a running pipeline, for `seedance tap`
// (served by the metrics listener, observe/http_listener.h; docs/operations.md).
//
// Points: a source's output (`source`), each processor's main output (`processor`), each side
// output (`output`: error, rejected, stale) and each sink's input (`sink`, as the sink takes a
// batch). A tap never slows or changes the pipeline:
// - with no tap open a point costs one relaxed atomic load (active());
// - each tap has its own ring of encoded lines, at most `ring_bytes`; when its client reads too
//   slowly the ring is full and further events are dropped for that tap only, counted in
//   `seedance_tap_dropped_total{slot}` and told to the client in a `{"dropped":N}` line;
// - at most `max_taps` are open at once (kResourceExhausted beyond), so the memory the taps
//   can hold is max_taps × ring_bytes.
// Thread-safe: points offer from the processing thread and the event loop; the listener takes.
// The hub belongs to the process, not to a pipeline, so taps outlive reloads.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "observe/metrics.h"
#include "seedance/event.h"
#include "seedance/result.h"

namespace seedance::observe {

inline constexpr size_t kMaxTaps = 4;
inline constexpr size_t kTapRingBytes = 1 << 20;

enum class TapPoint : uint8_t { kSource, kProcessor, kOutput, kSink };
std::string_view TapPointName(TapPoint point);

// What one tap wants. Components and outputs both empty: every point.
struct TapFilter {
  std::vector<std::string> components;  // sources, processors and sinks, by name
  std::vector<std::string> outputs;     // side outputs, by name
  std::string topic;                    // an MQTT topic filter; "" = any topic
  uint64_t sample = 1;                  // every Nth matching event (1 = each)
  uint64_t limit = 0;                   // the tap ends after this many events (0 = never)
};

// One client's tap: the hub fills its ring, the listener drains it.
class Tap {
 public:
  Tap(size_t slot, TapFilter filter, size_t ring_bytes, Counter& events, Counter& dropped)
      : slot_(slot),
        filter_(std::move(filter)),
        ring_bytes_(ring_bytes),
        events_(events),
        dropped_(dropped) {}

  size_t slot() const { return slot_; }
  // Moves waiting lines to `out`, about `max_bytes` (at least one line), then a
  // `{"dropped":N}` line when events were dropped since the last take. Returns true once the
  // tap has ended (its limit reached, or the hub ended it) and nothing waits any more.
  bool Take(std::string& out, size_t max_bytes);
  // From now on the tap takes nothing more; Take() reports its end once drained.
  void End();
  uint64_t dropped() const;
  // Bytes of the lines waiting.
  size_t waiting_bytes() const;

 private:
  friend class TapHub;
  bool Wants(TapPoint point, std::string_view name, const Event& event) const;
  // False when the tap has ended or samples the event out; counts the sample.
  bool Admit();
  void Push(std::string_view line);

  const size_t slot_;
  const TapFilter filter_;
  const size_t ring_bytes_;
  Counter& events_;
  Counter& dropped_;
  mutable std::mutex mu_;
  std::deque<std::string> lines_;
  size_t bytes_ = 0;
  uint64_t seen_ = 0;           // matching events, for `sample`
  uint64_t queued_ = 0;         // events queued, for `limit`
  uint64_t dropped_since_ = 0;  // since the last Take
  uint64_t dropped_total_ = 0;
  bool ended_ = false;
};

class TapHub {
 public:
  // Writes an event as one JSON value (the sinks' envelope, given by the caller so this layer
  // needs no sink code).
  using Encode = std::function<void(const Event& event, std::string& out)>;

  TapHub(MetricsRegistry& metrics, Encode encode, size_t max_taps = kMaxTaps,
         size_t ring_bytes = kTapRingBytes);

  // Hot path: whether any tap is open.
  bool active() const { return open_.load(std::memory_order_relaxed) != 0; }
  // Any thread: `event` passes point `point` of component (or output) `name`. Cheap to call
  // only when active().
  void Offer(TapPoint point, std::string_view name, const Event& event);

  // kInvalidArgument for a bad topic filter or sample; kResourceExhausted when max_taps taps
  // are open.
  Result<std::shared_ptr<Tap>> Open(TapFilter filter);
  void Close(const std::shared_ptr<Tap>& tap);
  // Ends every open tap (the listener stops).
  void EndAll();
  size_t open() const { return open_.load(std::memory_order_relaxed); }

 private:
  MetricsRegistry& metrics_;
  const Encode encode_;
  const size_t ring_bytes_;
  Gauge& open_gauge_;
  Counter& refused_;
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<Tap>> slots_;  // null: free
  std::atomic<size_t> open_{0};
};

}  // namespace seedance::observe
