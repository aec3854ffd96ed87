// OpenFiles: the descriptors the tail source holds, within max_open_files. A file closed to
// make room keeps its state and is opened again, by identity, when it grows. The open files
// are kept in the order of their last activity, so making room is O(1). Metrics:
// seedance_tail_files_open, seedance_tail_files_closed_total. Not thread-safe (the source's
// loop).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <string>

#include "observe/metrics.h"
#include "sources/tail/tracked_file.h"

namespace seedance::sources {

class OpenFiles {
 public:
  // Descriptors left to the rest of the process (the durable queue's segments and cursors,
  // sink and source connections, listeners): the open files stay below the process's limit
  // less these.
  static constexpr uint64_t kReservedDescriptors = 256;
  // How many of the least recently active files MakeRoom looks at for a quiet one.
  static constexpr size_t kQuietLookahead = 32;

  OpenFiles(int64_t max_open_files, std::string name, observe::MetricsRegistry& metrics);

  // Lowers the budget to what the process's descriptor limit leaves (said once, in the log).
  void LimitToDescriptors();
  // An open failed because the process is out of descriptors (EMFILE, ENFILE): the rest of
  // the process holds more than the budget left it. The budget is halved to half of what is
  // open now (at least 1; never raised again until a restart) and the least recently active
  // files above it are closed (never `keep`), giving their descriptors back. Logged at each
  // lowering (at most log2(budget) lines).
  void OutOfDescriptors(const TrackedFile* keep, int err);
  size_t budget() const { return budget_; }

  // `t` was opened as `fd`: it is the most recently active.
  void Opened(TrackedFile& t, int fd);
  // `t` was read from.
  void Touch(TrackedFile& t);
  // Closes `t`'s descriptor.
  void Close(TrackedFile& t);
  // Makes room for one more open file when the budget is reached: closes one of the least
  // recently active (never `keep`): a quiet one (`quiet`: read to its end, every line stored)
  // among the kQuietLookahead least recent if there is one, else the least recent.
  void MakeRoom(const TrackedFile* keep, const std::function<bool(const TrackedFile&)>& quiet);

 private:
  const std::string name_;
  size_t budget_;
  std::list<TrackedFile*> lru_;  // least recently active first
  bool warned_ = false;
  observe::Gauge& open_;
  observe::Counter& closed_for_room_;
};

}  // namespace seedance::sources
