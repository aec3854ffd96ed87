// CheckpointLog: the durable state of stateful processors (windows, watermarks) and of
// redelivery suppression, as (component, key) → value entries in one append-only file,
// <data_dir>/checkpoint/state.log.
//
// Records use the durable queue's framing (record_scanner.h, docs/formats/queue-log.md): the
// tag is the operation (1 put, 2 delete, 3 end of commit), the payload [u16 component length]
// [component][u32 key length][key][value] (empty for an end of commit), sequences
// consecutive. Each Commit() appends the entries changed since the last one and an end of
// commit in a single write (and fdatasync per the queue's fsync policy).
//
// Commits are atomic: opening replays the file (last write of a key wins) one commit at a
// time, and a commit whose end marker is missing (a process killed inside its write keeps a
// prefix of it) takes no effect and is cut, whole. A file written before end markers existed has
// none; all its records count. The queue's corruption policy applies: a damaged record is skipped
// and the replay resynchronises on the next sound one; the records lost are counted by their
// sequence gap (lost_records()). A file in the framing used before 0.3 is read and
// rewritten in this one. When the file grows past 4× the live entries (and 1 MiB) it is
// rewritten compactly (temporary file, fdatasync, rename, directory sync).
//
// Every file operation goes through a storage::FileSystem. Thread-compatible: the processing
// thread owns it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "seedance/result.h"
#include "storage/file_system.h"

namespace seedance::storage {

class CheckpointLog {
 public:
  enum class Fsync { kAlways, kInterval, kNever };
  using Entries = std::map<std::string, std::map<std::string, std::string>>;  // component → key

  static Result<std::unique_ptr<CheckpointLog>> Open(const std::string& dir, Fsync fsync,
                                                     std::chrono::nanoseconds fsync_interval,
                                                     FileSystem& fs = PosixFileSystem());
  ~CheckpointLog();

  // Every entry, as recovered at open and changed since.
  const Entries& entries() const { return live_; }
  // Records a change; an empty `value` deletes the key. Written by the next Commit().
  void Put(std::string_view component, std::string_view key, std::string_view value);
  // Writes the pending changes. kUnavailable on I/O errors, kResourceExhausted on a full file
  // system (the changes stay pending either way).
  Status Commit();
  // Interval fsync; call often.
  void Tick();

  uint64_t file_bytes() const { return file_bytes_; }
  // Bytes written since open: commits and compactions.
  uint64_t bytes_written() const { return bytes_written_; }
  uint64_t recovered_records() const { return recovered_records_; }
  // What the replay at open found wrong.
  uint64_t lost_records() const { return lost_records_; }        // damaged or missing records
  uint64_t damaged_bytes() const { return damaged_bytes_; }      // skipped over
  uint64_t truncated_bytes() const { return truncated_bytes_; }  // torn tail cut at the end
  bool truncated_tail() const { return truncated_bytes_ > 0; }

 private:
  explicit CheckpointLog(FileSystem& fs) : fs_(fs) {}
  Status Replay();
  // The framing used before 0.3: [u32 length][u32 masked CRC][u8 op][body]; stops at the first
  // bad record (then counted as lost).
  Status ReplayLegacy(std::string_view data);
  // Applies one record's operation to live_; false when its body is malformed.
  bool Apply(uint8_t op, std::string_view body);
  Status Compact();
  void Encode(std::string& out, bool put, std::string_view component, std::string_view key,
              std::string_view value);
  Status Error(const std::string& what, const std::string& path) const;

  FileSystem& fs_;
  std::string dir_;
  std::string path_;
  int fd_ = -1;
  int lock_fd_ = -1;
  Fsync fsync_ = Fsync::kInterval;
  std::chrono::nanoseconds fsync_interval_{0};
  std::chrono::steady_clock::time_point last_sync_{};
  bool unsynced_ = false;
  Entries live_;
  uint64_t live_bytes_ = 0;
  uint64_t file_bytes_ = 0;
  uint64_t bytes_written_ = 0;
  uint64_t next_sequence_ = 1;
  uint64_t recovered_records_ = 0;
  uint64_t lost_records_ = 0;
  uint64_t damaged_bytes_ = 0;
  uint64_t truncated_bytes_ = 0;
  std::string pending_;
  size_t marker_bytes_ = 0;  // pending_ ends with the commit's end marker, this long
};

}  // namespace seedance::storage
