// SinkCursor: one sink's view of the durable queue (what it has read, what is finished, its
// saved position). Made by DurableQueue::OpenCursor; see durable_queue.h.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "seedance/event.h"
#include "storage/cursor_file.h"
#include "storage/queue_reader.h"
#include "storage/queue_settings.h"

namespace seedance::storage {

using QueueConfig = storage::QueueSettings;

class DurableQueue;

// One sink's view of the queue: what it has read, what is finished, and the persisted
// position. Event-loop thread only.
class SinkCursor {
 public:
  // Reads up to `max` events for this sink's inputs into `out`, replacing what it held (its
  // elements are reused: their strings keep their storage). `*first`..`*last` is the range
  // of sequences consumed (records for other outputs included). False when no record is
  // available, or when read_error() says why none could be read (nothing is skipped: the
  // next Read() tries the same records again); `out` is then not a batch of events.
  bool Read(size_t max, std::vector<Event>* out, uint64_t* first, uint64_t* last);
  // 0, or the errno of the open or read of a queue segment that failed the last Read()
  // (EMFILE when the process is out of descriptors, EIO).
  int read_error() const { return read_error_; }
  // The range is finished (delivered, rejected or given up): moves the position past every
  // finished prefix, persists it now and then, and lets the queue delete consumed segments.
  void Done(uint64_t first, uint64_t last);
  // The range was read but not finished, and its events are no longer in memory (the memory
  // budget evicted them): Read() returns the same range again, before anything newer.
  void Return(uint64_t first, uint64_t last);
  // Ranges returned and not read again yet.
  size_t returned() const { return returned_.size(); }
  // Resizes `out` to `n`, keeping what it lets go as spare events (within their bounds) for
  // the next read that needs more than its batch holds: a pooled batch trimmed after a burst
  // gives its events here instead of freeing them.
  void Truncate(std::vector<Event>* out, size_t n);
  // The events kept for a longer read, and their payloads' storage (for tests).
  size_t spare_events() const { return spare_.size(); }
  size_t spare_payload_bytes() const { return spare_bytes_; }
  // Records appended or returned, and not read (again) yet.
  uint64_t Backlog() const;
  // Persists the position now (any thread).
  void Save();
  // Persists the position if the last save is 100 ms old (any thread).
  void MaybeSave(std::chrono::steady_clock::time_point now);
  uint64_t committed() const { return committed_.load(); }
  const std::string& name() const { return name_; }
  // The next sequence Read() takes (any thread).
  uint64_t read_next() const { return read_next_.load(); }
  ~SinkCursor();

 private:
  friend class DurableQueue;
  SinkCursor(DurableQueue& queue, std::string name, std::vector<Output> inputs, uint64_t start);
  // Reads the events of [first, last] for this sink's inputs again. Decoders write into
  // (*out)[*n] and advance *n. False (read_error_ set) when a segment could not be read.
  bool ReadAgain(uint64_t first, uint64_t last, std::vector<Event>* out, size_t* n);
  void Decode(uint64_t sequence, uint8_t tag, std::string_view payload, std::vector<Event>* out,
              size_t* n);
  // Hands the reader's sequence gaps to the queue, which counts each record once.
  void ReportGaps(storage::QueueReader& reader);

  DurableQueue& queue_;
  std::string name_;
  std::vector<bool> wanted_;  // by Output
  storage::QueueReader reader_;
  std::atomic<uint64_t> read_next_;
  std::atomic<uint64_t> committed_;                      // every sequence below is finished
  std::vector<std::pair<uint64_t, uint64_t>> finished_;  // finished ranges beyond committed_
  std::deque<std::pair<uint64_t, uint64_t>> returned_;   // to read again, oldest first
  int read_error_ = 0;
  // Events a shorter read took off the end of a batch, kept (with their strings' storage) for
  // the next longer one: at most kSpareEvents, holding at most kSpareBytes of payload storage
  // (pooled memory is not counted by the memory budget). 16 was too few at 5k msg/s: batch
  // sizes vary by more than that, and every event let go was allocated again.
  std::vector<Event> spare_;
  size_t spare_bytes_ = 0;  // payload capacity held by spare_
  static constexpr size_t kSpareEvents = 64;
  static constexpr size_t kSpareBytes = 64 * 1024;
  std::mutex save_mu_;  // Save runs on the event loop (Done) and the processing thread (Tick)
  std::chrono::steady_clock::time_point last_save_{};
  uint64_t saved_ = 0;
  storage::CursorWriter writer_;  // <data_dir>/cursors/<name>
};

}  // namespace seedance::storage
