// A sink's saved position in the durable queue: <data_dir>/cursors/<sink> holds one record of
// the queue's framing (tag 0, empty payload) whose sequence is the position. The text form
// written before 0.3 (the position in decimal and a newline) is still read. Format and policy:
// docs/formats/queue-log.md#cursors.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "storage/file_system.h"

namespace seedance::storage {

enum class CursorFile {
  kMissing,  // no file: the sink starts at the oldest retained record
  kOk,       // a checked record
  kText,     // the old text form: no checksum, so never proof of lost records
  kDamaged,  // unreadable: the sink re-sends from the oldest retained record
};

// Positions are saved at most this often while batches finish, and on a timer when idle.
inline constexpr auto kCursorSaveInterval = std::chrono::milliseconds(100);

CursorFile ReadCursorFile(FileSystem& fs, const std::string& path, uint64_t* position);
// Writes `position` to `path`: one record in `tmp_path`, renamed over `path` (not fsynced:
// a position lost in a power cut is an older one). False on any error, leaving no partial
// temporary file (a full disk). Allocates nothing after the first call on a thread.
bool WriteCursorFile(FileSystem& fs, const std::string& path, const std::string& tmp_path,
                     uint64_t position);

}  // namespace seedance::storage
