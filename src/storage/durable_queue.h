// DurableQueue: the queue between processors and sinks, on disk (storage::QueueLog).
//
// The processing thread appends every routed event as one record tagged with its output,
// then Commit()s the batch: records become visible to the sinks, and durable per the fsync
// policy; only then are the source events acknowledged upstream. Each sink reads the log
// through its own SinkCursor and keeps its own position (persisted under
// <data_dir>/cursors/); a segment is deleted once every sink has passed it.
//
// Disk limit: when the log reaches `max_disk`, or the file system is full (ENOSPC, EDQUOT),
// Append either waits for the sinks to free space (kBlock: sources stop being acknowledged and
// pause) or deletes the oldest segment (kDropOldest, counting the records no sink had
// delivered). A fully delivered active segment is emptied then too, and writing resumes by
// itself once space returns.
//
// Positions: each cursor file holds one CRC-checked record (docs/formats/queue-log.md). A
// damaged one restarts its sink from the oldest retained record (duplicates, never loss); one
// beyond the log's end is clamped to it. Sequence numbers never go backwards across restarts:
// the log continues after the highest saved position. Positions are saved at most every
// 100 ms, on a timer too (Tick), so an idle sink's position is never stale.
//
// Losses: every sequence the log should hold and does not (damage, a missing segment, a torn
// or lost tail) is logged with its record count for each sink that had not delivered it, and
// counted once in seedance_queue_lost_records_total{reason}.
//
// Thread-safety: Append/Commit/Tick from the processing thread; AppendNoWait and the
// SinkCursor methods from the event loop; everything else from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "config/config.h"
#include "observe/metrics.h"
#include "seedance/event.h"
#include "seedance/result.h"
#include "storage/file_system.h"
#include "storage/queue_log.h"
#include "storage/queue_reader.h"

namespace seedance {

using QueueConfig = config::QueueSettings;

class DurableQueue;

// One sink's view of the queue: what it has read, what is finished, and the persisted
// position. Event-loop thread only.
class SinkCursor {
 public:
  // Reads up to `max` events for this sink's inputs into `out`, replacing what it held (its
  // elements are reused: their strings keep their storage). `*first`..`*last` is the range
  // of sequences consumed (records for other outputs included). False when no record is
  // available.
  bool Read(size_t max, std::vector<Event>* out, uint64_t* first, uint64_t* last);
  // The range is finished (delivered, rejected or given up): moves the position past every
  // finished prefix, persists it now and then, and lets the queue delete consumed segments.
  void Done(uint64_t first, uint64_t last);
  // The range was read but not finished, and its events are no longer in memory (the memory
  // budget evicted them): Read() returns the same range again, before anything newer.
  void Return(uint64_t first, uint64_t last);
  // Ranges returned and not read again yet.
  size_t returned() const { return returned_.size(); }
  // Records appended or returned, and not read (again) yet.
  uint64_t Backlog() const;
  // Persists the position now (any thread).
  void Save();
  // Persists the position if the last save is 100 ms old (any thread).
  void MaybeSave(std::chrono::steady_clock::time_point now);
  uint64_t committed() const { return committed_.load(); }
  ~SinkCursor();

 private:
  friend class DurableQueue;
  SinkCursor(DurableQueue& queue, std::string name, std::vector<Output> inputs, uint64_t start);
  // Reads the events of [first, last] for this sink's inputs again.
  // Decoders write into (*out)[*n] and advance *n.
  void ReadAgain(uint64_t first, uint64_t last, std::vector<Event>* out, size_t* n);
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
  // Events a shorter read took off the end of a batch, kept (with their strings' storage) for
  // the next longer one; at most kSpareEvents.
  std::vector<Event> spare_;
  static constexpr size_t kSpareEvents = 16;
  // Resizes `out` to `n`, moving a shrink's tail to spare_.
  void Truncate(std::vector<Event>* out, size_t n);
  std::mutex save_mu_;  // Save runs on the event loop (Done) and the processing thread (Tick)
  std::chrono::steady_clock::time_point last_save_{};
  uint64_t saved_ = 0;
  const std::string path_;      // <data_dir>/cursors/<name>
  const std::string tmp_path_;  // written, then renamed to path_
};

class DurableQueue {
 public:
  // Every file operation goes through `fs` (tests inject faults there).
  static Result<std::unique_ptr<DurableQueue>> Open(
      const QueueConfig& config, observe::MetricsRegistry& metrics,
      storage::FileSystem& fs = storage::PosixFileSystem());
  ~DurableQueue();

  // Appends `event` for `output`. At the disk limit it waits for space (kBlock) until
  // `deadline`, or drops the oldest segment (drop_oldest). kUnavailable on I/O errors.
  Status Append(Output output, const Event& event,
                std::chrono::steady_clock::time_point deadline =
                    std::chrono::steady_clock::time_point::max());
  // Appends without waiting and commits at once (side outputs raised on the event loop).
  Status AppendNoWait(Output output, const Event& event);
  // Makes the appended records visible and durable per the fsync policy, then runs the
  // listener. kUnavailable on I/O errors, kResourceExhausted while the file system is full
  // (nothing may be acknowledged then; call again, the records stay buffered).
  Status Commit();
  // Interval fsync and periodic position saves; call often (at least every 100 ms).
  void Tick();
  // Any thread: from now on appends wait for space no later than `deadline` (shutdown).
  void SetShutdownDeadline(std::chrono::steady_clock::time_point deadline) {
    shutdown_deadline_ns_.store(deadline.time_since_epoch().count());
    space_cv_.notify_all();
  }
  // Flush and fdatasync now (shutdown).
  Status Sync() { return log_->Sync(); }

  // Cursor for sink `name` reading `inputs`, from its persisted position.
  std::unique_ptr<SinkCursor> OpenCursor(const std::string& name, std::vector<Output> inputs);
  // Runs after each Commit (any thread): the pipeline wakes its sinks here.
  void SetCommitListener(std::function<void()> listener) { on_commit_ = std::move(listener); }
  // Saves every cursor now (shutdown).
  void SaveCursors();

  uint64_t disk_bytes() const { return log_->disk_bytes(); }
  const storage::QueueLog& log() const { return *log_; }
  const QueueConfig& config() const { return config_; }

 private:
  friend class SinkCursor;
  DurableQueue(QueueConfig config, std::unique_ptr<storage::QueueLog> log,
               observe::MetricsRegistry& metrics);
  struct KnownGap {
    storage::SequenceGap gap;
    bool counted = false;
    bool loss = true;  // false: sequences skipped on purpose (a saved position moved them on)
  };
  void CollectGarbage();
  std::string CursorPath(const std::string& name) const;
  Status MakeRoom(std::chrono::steady_clock::time_point deadline);
  bool Full() const;
  void NoteNoSpace(const Status& status);
  // drop_oldest: deletes the oldest segment, counting the records no sink had delivered.
  bool DropOldest();
  uint64_t MinCommitted();
  // Counts (once) and logs the records of `gap` that sink `sink` will never deliver.
  // gaps_mu_ held.
  void ReportLoss(const std::string& sink, const storage::SequenceGap& gap);
  void ReportGaps(const std::string& sink, const std::vector<storage::SequenceGap>& gaps);
  observe::Counter& Lost(storage::LossReason reason);

  QueueConfig config_;
  std::unique_ptr<storage::QueueLog> log_;
  std::function<void()> on_commit_;
  std::mutex cursors_mu_;
  std::vector<SinkCursor*> cursors_;
  std::mutex space_mu_;
  std::condition_variable space_cv_;
  std::chrono::steady_clock::time_point last_sync_ = std::chrono::steady_clock::now();
  bool dirty_ = false;  // flushed but not synced
  std::atomic<int64_t> shutdown_deadline_ns_{INT64_MAX};
  std::string scratch_;
  uint64_t log_end_at_open_ = 0;  // next sequence after recovery, before any SkipTo
  std::mutex gaps_mu_;
  std::vector<KnownGap> gaps_;  // missing sequences known so far, oldest first
  std::atomic<bool> no_space_{false};
  std::chrono::steady_clock::time_point last_cursor_save_{};
  observe::MetricsRegistry& metrics_;
  observe::Gauge& disk_gauge_;
  observe::Counter& appended_;
  observe::Counter& dropped_;
  observe::Counter& blocked_;
  observe::Counter& corrupt_;
  observe::Counter& damaged_bytes_;
  observe::Counter& disk_full_;
  observe::Histogram& fsync_latency_;
};

}  // namespace seedance
