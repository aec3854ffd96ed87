// TrackedFile: what the tail source knows of one file it follows.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <list>
#include <string>

#include "sources/tail/file_identity.h"
#include "sources/tail/line_splitter.h"

namespace seedance::sources {

// One file being read.
struct TrackedFile {
  explicit TrackedFile(size_t max_line) : lines(max_line) {}
  uint64_t id = 0;
  std::string path;          // where it was opened: the events' topic
  std::string current_path;  // where it is now (it may have been renamed)
  int fd = -1;               // -1: closed to stay within max_open_files; opened again by identity
  FileId identity;
  std::list<TrackedFile*>::iterator lru;  // while open: its place in the open files' order
  uint64_t offset = 0;                    // bytes read into `lines`
  LineSplitter lines;                     // read, not yet emitted (a partial line at least)
  std::string head;                       // the file's first bytes, up to kFingerprintBytes
  bool moved_away = false;  // the path names another file now, or none: read to the end
  // Moved away: when it last grew (or was first seen moved); let go rotate_wait after it.
  std::chrono::steady_clock::time_point quiet_since;
  uint64_t size_seen = 0;
  uint64_t stored = 0;  // offset past the last line stored (acknowledged)
  uint64_t epoch = 0;   // +1 at each truncation: acks of lines from before it are stale
  // With stateful processors: the file's stream in the checkpoint (one per epoch), and how
  // much of its head the checkpoint knows.
  uint32_t stream = 0;
  size_t head_reported = 0;
};

}  // namespace seedance::sources
