// ProcessingLoop: the work of the processing thread.
//
// It takes batches from the IngestQueue, checks JSON payloads, runs each event through the
// processors in order and hands what comes out to the Router (main, or a side output with its
// reason). Then it makes the batch safe — committed to the durable queue, the state it changed
// checkpointed — and only then acknowledges its events upstream. A batch that could not be
// made safe is not acknowledged (its sources send it again). Every kTickInterval it ticks the
// processors (windows fire on the wall clock) and the durable queue.
//
// Run() returns once the ingest queue is closed and drained, or when the shutdown deadline has
// passed with a batch that could not be made safe. Run() runs on one thread; the shutdown
// deadline may be set from any other.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/checkpointer.h"
#include "core/ingest_queue.h"
#include "core/reloader.h"
#include "core/router.h"
#include "observe/component_stats.h"
#include "observe/tap_hub.h"
#include "observe/tracer.h"
#include "seedance/processor.h"
#include "storage/durable_queue.h"
#include "util/log.h"
#include "util/loop_signal.h"

namespace seedance {

class ProcessingLoop {
 public:
  using Deadline = std::chrono::steady_clock::time_point;

  // A processor and its name and counters, in pipeline order.
  struct Stage {
    std::string name;
    ComponentStats* stats = nullptr;
    Processor* processor = nullptr;
  };
  struct Parts {
    IngestQueue* ingest = nullptr;
    Router* router = nullptr;
    std::vector<Stage> stages;
    storage::DurableQueue* queue = nullptr;  // null with buffer: memory
    Checkpointer* checkpoint = nullptr;      // null without stateful processors
    Reloader* reloader = nullptr;            // null: no reloads
    observe::TapHub* taps = nullptr;         // null: no taps (source and processor outputs)
    observe::Tracer* tracer = nullptr;       // null: tracing off (each traced event's span)
    // Collects the event-loop wake-ups of one batch (acknowledgements, sink kicks) into one.
    util::WakeBatcher* wakes = nullptr;  // null: each wakes the loop itself
    // A payload from source `source` was not valid JSON (the source counts it).
    std::function<void(const std::string& source)> on_invalid_json;
    // Durable mode: the batch's events are done with; their storage may be reused.
    std::function<void(std::vector<IngestItem>&)> recycle;
    // Fault injection for tests: a wait between a batch's commit and its acknowledgements.
    std::chrono::milliseconds ack_delay{0};
  };

  static constexpr size_t kBatch = 256;
  static constexpr std::chrono::milliseconds kTickInterval{100};

  explicit ProcessingLoop(Parts parts);

  void Run();

  // From shutdown: pushes that wait for room and retries of commits give up at `deadline`.
  void SetShutdownDeadline(Deadline deadline);
  // Until when a push from this thread may wait for room.
  Deadline PushDeadline() const;
  // Any thread: ingest items taken and done with (acknowledged, or left unacknowledged when
  // they could not be made safe). Once it reaches IngestQueue::pushed() as read at some
  // moment, everything pushed before then is through.
  uint64_t handled() const { return handled_.load(std::memory_order_acquire); }

 private:
  class StageOutput;

  bool PastShutdownDeadline() const;
  void ProcessOne(IngestItem& item);
  void RunFrom(size_t stage, Event&& event);
  // A side output through the router; a failed append fails the batch.
  void RouteSide(Output output, Event&& event, std::string_view reason,
                 const std::string& component);
  // Durable mode: makes the batch's records visible and durable, retrying on I/O errors and
  // a full disk until the shutdown deadline. False when it gave up (nothing may be acked).
  bool CommitBatch();
  // Commits the state changed by the batch (and its redelivery ids) before it is acknowledged,
  // retrying until the shutdown deadline. False when it gave up.
  bool SaveCheckpoint();
  void Tick();

  Parts parts_;
  // Steady-clock ns after which pushes stop waiting for room (set by shutdown).
  std::atomic<int64_t> deadline_ns_{INT64_MAX};
  // An event of the current batch could not be appended: the batch must not be acknowledged.
  bool batch_failed_ = false;
  std::atomic<uint64_t> handled_{0};
  util::LogLimiter log_limiter_;
};

}  // namespace seedance
