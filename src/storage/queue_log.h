// QueueLog: the durable queue's append-only, segmented log (the writer side).
//
// Records go into segment files "<first sequence>.log" in one directory (layout in
// log_format.h and docs/formats/queue-log.md). Append() buffers, Flush() hands the buffer to
// the kernel with write(2) (survives a process crash), Sync() also fdatasyncs (survives a
// power cut). A segment is closed (and synced) once it reaches `segment_bytes`. Every write,
// sync, truncate, rename and unlink goes through `options.fs`.
//
// Open() recovers: it scans every segment, truncates a torn record at the end of the newest
// one, and reports every sequence gap it finds (records lost to corruption, a missing segment,
// a torn tail) with its range; damaged bytes stay on disk and readers skip them. A LOCK file
// held with flock(2) keeps two processes from sharing a directory.
//
// A full file system (ENOSPC, EDQUOT) is kResourceExhausted, not an I/O error: what could not
// be written stays buffered and the next Flush() retries it.
//
// Thread-safe: all methods lock one mutex.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "seedance/result.h"
#include "storage/file_system.h"

namespace seedance::storage {

struct LogOptions {
  std::string dir;
  uint64_t segment_bytes = 64ull * 1024 * 1024;
  FileSystem* fs = &PosixFileSystem();
};

// Why records are missing from the log.
// kDropped: deleted on purpose at the disk limit (when_full: drop_oldest) before a sink read
// it; counted by seedance_queue_dropped_total, not as a loss of the log.
enum class LossReason { kCorrupt, kMissingSegment, kTornTail, kLostTail, kDropped };
const char* LossReasonName(LossReason reason);

// Sequences [first, last] that the log should hold and does not.
struct SequenceGap {
  uint64_t first = 0;
  uint64_t last = 0;
  LossReason reason = LossReason::kCorrupt;
  uint64_t records() const { return last - first + 1; }
};

struct RecoveryReport {
  uint64_t segments = 0;
  uint64_t records = 0;           // valid records found
  uint64_t damaged_regions = 0;   // stretches of bytes that failed a CRC (skipped)
  uint64_t damaged_bytes = 0;     // bytes in them
  uint64_t truncated_bytes = 0;   // torn tail removed from the newest segment
  std::vector<SequenceGap> gaps;  // oldest first
};

struct SegmentInfo {
  uint64_t first_sequence = 0;
  std::string path;
  uint64_t size = 0;    // bytes readers may read (flushed bytes, for the active segment)
  bool active = false;  // still being written
};

class QueueLog {
 public:
  // Opens (creating) the log in options.dir. kFailedPrecondition when another process holds
  // the directory; kUnavailable for I/O errors.
  static Result<std::unique_ptr<QueueLog>> Open(const LogOptions& options, RecoveryReport* report);
  ~QueueLog();

  // Appends one record and returns its sequence number. Buffered until Flush().
  // kInvalidArgument for payloads over 64 MiB; kUnavailable when a segment cannot be created,
  // kResourceExhausted when the file system is full.
  Result<uint64_t> Append(uint8_t tag, std::string_view payload);
  // The same with the payload written by `encode` straight into the log's buffer (no copy of
  // a large event).
  Result<uint64_t> AppendEncoded(uint8_t tag, const std::function<void(std::string&)>& encode);
  // Writes buffered records to the kernel. kResourceExhausted when the file system is full
  // (the records stay buffered), kUnavailable on other I/O errors.
  Status Flush();
  // Flush() and fdatasync. The fdatasync runs without the lock the other methods take (a
  // reader on the event loop never waits for the disk); only a rotation waits for it.
  Status Sync();
  // fdatasync of what Flush() has written, leaving the buffer alone: the interval policy's
  // sync on its own thread (BackgroundSync), while appends and commits go on.
  Status SyncWritten();

  // Sequence numbers continue from `sequence` at least (never backwards): records that other
  // state (a sink's saved position) proves were written are not numbered again.
  Status SkipTo(uint64_t sequence);
  // Deletes closed segments that hold only records with sequence < `sequence`. With
  // `reclaim_active`, a fully consumed active segment is emptied too (the only segment on a
  // full disk must not stay there for good).
  void DeleteBefore(uint64_t sequence, bool reclaim_active = false);
  // Deletes the oldest segment (drop-oldest policy); the active one only when it is the last
  // and holds records. Returns the sequences it held, [first, last], or kFailedPrecondition
  // when nothing can be dropped.
  Result<std::pair<uint64_t, uint64_t>> DropOldestSegment();

  // New segments close at `bytes` from now on (the active one included).
  void SetSegmentBytes(uint64_t bytes);
  uint64_t segment_bytes() const;

  uint64_t next_sequence() const;
  // One past the last record handed to the kernel (what survives a process crash).
  uint64_t flushed_next() const;
  // Sequence of the oldest record still on disk (== next_sequence() when empty).
  uint64_t first_sequence() const;
  uint64_t disk_bytes() const;
  std::vector<SegmentInfo> Segments() const;
  // Where the segment that starts at `first_sequence` stands, without copying the list (the
  // reader asks every time it catches up with the writer).
  struct SegmentPosition {
    bool found = false;         // the segment is still there
    uint64_t size = 0;          // its readable bytes
    bool active = false;        // still being written
    bool has_next = false;      // a newer segment exists ...
    uint64_t next_first = 0;    // ... starting here
    bool any = false;           // any segment exists ...
    uint64_t oldest_first = 0;  // ... the oldest starting here
  };
  SegmentPosition Locate(uint64_t first_sequence) const;
  const std::string& dir() const { return options_.dir; }
  FileSystem& fs() const { return *options_.fs; }

 private:
  struct Segment {
    uint64_t first_sequence;
    std::string path;
    uint64_t size;  // bytes written to the file
  };
  explicit QueueLog(LogOptions options);
  Status Recover(RecoveryReport* report);
  Status OpenActive(uint64_t first_sequence);
  // Sync() (flush first) and SyncWritten() (only what is written).
  Status SyncActive(bool flush);
  Status FlushLocked();
  Status RotateLocked();
  // Empties the active segment and renames it to start at `first_sequence` (buffered records,
  // which start there, are written to it next).
  Status RestartActiveLocked(uint64_t first_sequence);
  Status Error(const std::string& what, const std::string& path) const;

  LogOptions options_;
  FileSystem& fs_;
  // Held while fd_ may be closed (rotation, destruction) and by Sync() during its fdatasync, so
  // the descriptor it syncs stays open. Taken before mu_.
  std::mutex fd_mu_;
  std::string sync_path_;  // the segment Sync() is syncing (under fd_mu_), for its error
  mutable std::mutex mu_;
  std::vector<Segment> segments_;  // oldest first; the last one is active
  int fd_ = -1;                    // active segment
  int lock_fd_ = -1;
  std::string buffer_;  // appended, not yet written
  // Sequence of the first record in buffer_ (next_sequence_ when empty); 0 when a failed write
  // left buffer_ starting inside a record.
  uint64_t buffer_first_ = 1;
  uint64_t next_sequence_ = 1;
  uint64_t flushed_next_ = 1;
  uint64_t disk_bytes_ = 0;
};

}  // namespace seedance::storage
