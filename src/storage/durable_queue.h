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
// SinkCursor methods from the event loop; everything else from any thread. The interval
// fsync runs on its own thread (sd-fsync).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "observe/metrics.h"
#include "seedance/event.h"
#include "seedance/result.h"
#include "storage/background_sync.h"
#include "storage/cursor_file.h"
#include "storage/file_system.h"
#include "storage/queue_log.h"
#include "storage/queue_reader.h"
#include "storage/queue_settings.h"
#include "storage/sink_cursor.h"

namespace seedance::storage {

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
  // Periodic position saves; call often (at least every 100 ms). The interval fsync runs on
  // a thread of its own (storage::BackgroundSync), so a slow disk does not hold up the caller.
  void Tick();
  // Any thread: from now on appends wait for space no later than `deadline` (shutdown).
  void SetShutdownDeadline(std::chrono::steady_clock::time_point deadline) {
    shutdown_deadline_ns_.store(deadline.time_since_epoch().count());
    space_cv_.notify_all();
  }
  // Flush and fdatasync now (shutdown).
  Status Sync() { return log_->Sync(); }

  // Where a sink without a saved position starts: the oldest retained record (a first start:
  // everything queued is for it), or the log's end (a sink added by a reload: what was queued
  // before was for the sinks configured then).
  enum class NewCursorAt { kOldest, kEnd };
  // Cursor for sink `name` reading `inputs`, from its persisted position.
  std::unique_ptr<SinkCursor> OpenCursor(const std::string& name, std::vector<Output> inputs,
                                         NewCursorAt new_at = NewCursorAt::kOldest);
  // Deletes the saved position of sink `name` (a sink removed by a reload; its records are
  // released as if delivered). No cursor of a queue open on `config.data_dir` may read for
  // `name`. False when there was none.
  static bool ForgetCursor(const QueueConfig& config, const std::string& name,
                           storage::FileSystem& fs = storage::PosixFileSystem());
  // Runs after each Commit (any thread): the pipeline wakes its sinks here.
  void SetCommitListener(std::function<void()> listener) { on_commit_ = std::move(listener); }
  // Saves every cursor, and the log's end, now (shutdown).
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
  // The lowest sequence some sink has not read yet (UINT64_MAX without sinks).
  uint64_t MinReadNext();
  // Counts (once) and logs the records of `gap` that sink `sink` will never deliver.
  // gaps_mu_ held.
  void ReportLoss(const std::string& sink, KnownGap& known);
  // Counts the parts of `gaps` no known gap covers (each record once, whichever sink finds
  // it) and returns how many records that was.
  uint64_t ReportGaps(const std::string& sink, const std::vector<storage::SequenceGap>& gaps);
  observe::Counter& Lost(storage::LossReason reason);

  QueueConfig config_;
  std::unique_ptr<storage::QueueLog> log_;
  std::function<void()> on_commit_;
  std::mutex cursors_mu_;
  std::vector<SinkCursor*> cursors_;
  std::set<std::string> opened_;  // sinks a cursor was opened for since Open (cursors_mu_)
  // True when this process opened a cursor for `name` before (its file is this run's).
  bool SavedThisRun(const std::string& name);
  std::mutex space_mu_;
  std::condition_variable space_cv_;
  std::atomic<int64_t> shutdown_deadline_ns_{INT64_MAX};
  uint64_t log_end_at_open_ = 0;  // next sequence after recovery, before any SkipTo
  std::mutex gaps_mu_;
  std::map<uint64_t, KnownGap> gaps_;  // missing sequences known so far, by first; disjoint
  std::atomic<bool> no_space_{false};
  std::chrono::steady_clock::time_point last_cursor_save_{};
  // <data_dir>/queue/HEAD: the log's flushed end, saved with the positions, so a lost tail is
  // counted at the next start even when no sink had read it.
  std::unique_ptr<storage::CursorWriter> head_writer_;
  uint64_t head_saved_ = 0;
  void SaveHead();
  // The interval policy's fdatasync (null under the other policies). Declared after log_:
  // destroyed, and its thread stopped, before the log.
  std::unique_ptr<storage::BackgroundSync> background_sync_;
  bool fsync_failing_ = false;  // sd-fsync only: the last background sync failed
  // One background fdatasync (on sd-fsync): timed, failures counted and logged once per episode.
  bool BackgroundSyncOnce();
  void MarkWritten() {
    if (background_sync_) background_sync_->MarkDirty();
  }
  observe::MetricsRegistry& metrics_;
  observe::Gauge& disk_gauge_;
  observe::Counter& appended_;
  observe::Counter& dropped_;
  observe::Counter& blocked_;
  observe::Counter& corrupt_;
  observe::Counter& damaged_bytes_;
  observe::Counter& disk_full_;
  observe::Histogram& fsync_latency_;
  observe::Counter& fsync_failures_;
};

}  // namespace seedance::storage
