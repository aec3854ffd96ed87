// CheckpointLog: the durable state of stateful processors (windows, watermarks) and of
// redelivery suppression, as (component, key) → value entries in one append-only file,
// <data_dir>/checkpoint/state.log.
//
// Each Commit() appends the entries changed since the last one in a single write(2) (and
// fdatasync per the queue's fsync policy); a record is [u32 length][u32 masked CRC-32C]
// [u8 op][u16 component length][component][u32 key length][key][value]. Opening replays the
// file (last write of a key wins) and truncates a torn or corrupt tail. When the file grows
// past 4× the live entries (and 1 MiB) it is rewritten compactly (temporary file, rename).
//
// Thread-compatible: the processing thread owns it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "seedance/result.h"

namespace seedance::storage {

class CheckpointLog {
 public:
  enum class Fsync { kAlways, kInterval, kNever };
  using Entries = std::map<std::string, std::map<std::string, std::string>>;  // component → key

  static Result<std::unique_ptr<CheckpointLog>> Open(const std::string& dir, Fsync fsync,
                                                     std::chrono::nanoseconds fsync_interval);
  ~CheckpointLog();

  // Every entry, as recovered at open and changed since.
  const Entries& entries() const { return live_; }
  // Records a change; an empty `value` deletes the key. Written by the next Commit().
  void Put(std::string_view component, std::string_view key, std::string_view value);
  // Writes the pending changes. kUnavailable on I/O errors (they stay pending).
  Status Commit();
  // Interval fsync; call often.
  void Tick();

  uint64_t file_bytes() const { return file_bytes_; }
  uint64_t recovered_records() const { return recovered_records_; }
  bool truncated_tail() const { return truncated_tail_; }

 private:
  CheckpointLog() = default;
  Status Replay();
  Status Compact();
  static void Encode(std::string& out, bool put, std::string_view component,
                     std::string_view key, std::string_view value);

  std::string dir_;
  std::string path_;
  int fd_ = -1;
  Fsync fsync_ = Fsync::kInterval;
  std::chrono::nanoseconds fsync_interval_{0};
  std::chrono::steady_clock::time_point last_sync_{};
  bool unsynced_ = false;
  Entries live_;
  uint64_t live_bytes_ = 0;
  uint64_t file_bytes_ = 0;
  uint64_t recovered_records_ = 0;
  bool truncated_tail_ = false;
  std::string pending_;
};

}  // namespace seedance::storage
