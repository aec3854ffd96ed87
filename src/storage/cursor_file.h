// A saved position in the durable queue: <data_dir>/cursors/<sink> (a sink's position) and
// <data_dir>/queue/HEAD (the log's end). The file has two slots, at offsets 0 and 4096, each
// one record of the queue's framing (tag 0, payload the slot's generation as u64 little-endian)
// whose sequence is the position. A save overwrites the older slot in place: one pwrite on a
// descriptor kept open, no file created, renamed or freed, so no allocation of blocks and
// inodes per save (and no wear of a flash card for them) and a save needs no free space once
// the file exists; a write torn by a crash leaves the other slot's older position. Read: the
// valid slot of the higher generation. Also read: the single record (empty payload) written
// by earlier builds and the text form written before 0.3 (the position in decimal and a newline).
// Format and policy: docs/formats/queue-log.md#cursors.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "storage/file_system.h"

namespace seedance::storage {

enum class CursorFile {
  kMissing,     // no file: the sink starts at the oldest retained record
  kOk,          // a checked record
  kText,        // the old text form: no checksum, so never proof of lost records
  kDamaged,     // read, but no valid slot: the sink re-sends from the oldest retained record
  kUnreadable,  // not read (out of descriptors, EIO, no permission): nothing is known of it
};

// Positions are saved at most this often while batches finish, and on a timer when idle.
inline constexpr auto kCursorSaveInterval = std::chrono::milliseconds(100);

// Where the second slot starts: a block of its own, so that a torn write of one slot (a
// flash page rewritten whole) cannot touch the other.
inline constexpr size_t kCursorSlotStride = 4096;

// The position of the newest valid slot; `generation` (if not null) receives its generation
// (0 for the older single-record and text forms); `why` (if not null), the reason when the
// file could not be read.
CursorFile ReadCursorFile(FileSystem& fs, const std::string& path, uint64_t* position,
                          uint64_t* generation = nullptr, std::string* why = nullptr);

// Saves positions to one file (the format above). Not fsynced: a position lost in a power cut
// is an older one. Not thread-safe; allocates nothing after the first Write.
class CursorWriter {
 public:
  CursorWriter(FileSystem& fs, std::string path);
  ~CursorWriter();
  CursorWriter(const CursorWriter&) = delete;
  CursorWriter& operator=(const CursorWriter&) = delete;

  // Writes `position` to the older slot. False on any error (the file stays as it was, or
  // with that slot torn; one that cannot be read first is not written); the next Write tries
  // again, reopening the file.
  bool Write(uint64_t position);
  const std::string& path() const { return path_; }

 private:
  FileSystem& fs_;
  const std::string path_;
  int fd_ = -1;
  uint64_t next_generation_ = 0;  // 0: not read from the file yet
  int next_slot_ = 0;             // the slot not holding the newest position
  bool truncate_ = false;         // the file read as damaged: emptied when opened
  std::string record_;
};

}  // namespace seedance::storage
