// QueueLog: the durable queue's append-only, segmented log (the writer side).
//
// Records go into segment files "<first sequence>.log" in one directory (layout in
// log_format.h and docs/formats/queue-log.md). Append() buffers, Flush() hands the buffer to
// the kernel with write(2) (survives a process crash), Sync() also fdatasyncs (survives a
// power cut). A segment is closed (and synced) once it reaches `segment_bytes`.
//
// Open() recovers: it scans every segment, truncates a torn record at the end of the newest
// one, and counts corrupt records (they stay on disk; readers skip them). A LOCK file held
// with flock(2) keeps two processes from sharing a directory.
//
// Thread-safe: all methods lock one mutex.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "seedance/result.h"

namespace seedance::storage {

struct LogOptions {
  std::string dir;
  uint64_t segment_bytes = 64ull * 1024 * 1024;
};

struct RecoveryReport {
  uint64_t segments = 0;
  uint64_t records = 0;          // valid records found
  uint64_t corrupt_records = 0;  // records or header regions that failed their CRC
  uint64_t corrupt_bytes = 0;    // bytes skipped over because of them
  uint64_t truncated_bytes = 0;  // torn tail removed from the newest segment
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
  // kInvalidArgument for payloads over 64 MiB; kUnavailable when a segment cannot be created.
  Result<uint64_t> Append(uint8_t tag, std::string_view payload);
  // Writes buffered records to the kernel. kUnavailable on I/O errors (ENOSPC included).
  Status Flush();
  // Flush() and fdatasync.
  Status Sync();

  // Deletes closed segments that hold only records with sequence < `sequence`.
  void DeleteBefore(uint64_t sequence);
  // Deletes the oldest closed segment (drop-oldest policy). Returns the number of records it
  // held, or kFailedPrecondition when only the active segment is left.
  Result<uint64_t> DropOldestSegment();

  uint64_t next_sequence() const;
  // Sequence of the oldest record still on disk (== next_sequence() when empty).
  uint64_t first_sequence() const;
  uint64_t disk_bytes() const;
  std::vector<SegmentInfo> Segments() const;
  // Where the segment that starts at `first_sequence` stands, without copying the list (the
  // reader asks every time it catches up with the writer).
  struct SegmentPosition {
    bool found = false;        // the segment is still there
    uint64_t size = 0;         // its readable bytes
    bool active = false;       // still being written
    bool has_next = false;     // a newer segment exists ...
    uint64_t next_first = 0;   // ... starting here
    bool any = false;          // any segment exists ...
    uint64_t oldest_first = 0; // ... the oldest starting here
  };
  SegmentPosition Locate(uint64_t first_sequence) const;
  const std::string& dir() const { return options_.dir; }

 private:
  struct Segment {
    uint64_t first_sequence;
    std::string path;
    uint64_t size;  // bytes written to the file
  };
  explicit QueueLog(LogOptions options);
  Status Recover(RecoveryReport* report);
  Status OpenActive(uint64_t first_sequence);
  Status FlushLocked();
  Status RotateLocked();
  void SyncDir();

  LogOptions options_;
  mutable std::mutex mu_;
  std::vector<Segment> segments_;  // oldest first; the last one is active
  int fd_ = -1;                    // active segment
  int lock_fd_ = -1;
  std::string buffer_;  // appended, not yet written
  uint64_t next_sequence_ = 1;
  uint64_t disk_bytes_ = 0;
};

}  // namespace seedance::storage
