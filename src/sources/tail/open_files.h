// OpenFiles: the descriptors the tail source holds, within max_open_files. A file closed to
// make room keeps its state and is opened again, by identity, when it grows. The open files
// are kept in the order of their last activity, so making room is O(1). Metrics:
// seedance_tail_files_open, seedance_tail_files_closed_total. Not thread-safe (the source's
// loop).
#pragma once

#include <chrono>
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
  using Clock = std::chrono::steady_clock;

  // Descriptors left to the rest of the process (the durable queue's segments and cursors,
  // sink and source connections, listeners): the open files stay below the process's limit
  // less these.
  static constexpr uint64_t kReservedDescriptors = 256;
  // How many of the least recently active files MakeRoom looks at for a quiet one.
  static constexpr size_t kQuietLookahead = 32;
  // How long a budget lowered for want of descriptors stays so before it is doubled again.
  static constexpr std::chrono::seconds kRaiseAfter{60};

  OpenFiles(int64_t max_open_files, std::string name, observe::MetricsRegistry& metrics);

  // Lowers the budget to what the process's descriptor limit leaves (said once, in the log).
  void LimitToDescriptors();
  // An open failed because the process is out of descriptors (EMFILE, ENFILE): the rest of
  // the process holds more than the budget left it. The budget is halved to half of what is
  // open now (at least 1) and the least recently active files above it are closed (never
  // `keep`), giving their descriptors back. Logged at each lowering (at most log2(budget)
  // lines per shortage).
  void OutOfDescriptors(const TrackedFile* keep, int err, Clock::time_point now);
  // Called at each scan: once kRaiseAfter has passed without a shortage (and again after each
  // raise), a lowered budget is doubled, up to what it was before the first lowering; logged.
  // Before, it stayed lowered until a restart: one burst of clients left the tail reopening
  // its files for good.
  void RaiseWhenCalm(Clock::time_point now);
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
  size_t full_budget_;            // before any shortage: max_open_files, or what the limit leaves
  Clock::time_point short_at_{};  // the last shortage, or the last raise since
  std::list<TrackedFile*> lru_;   // least recently active first
  bool warned_ = false;
  observe::Gauge& open_;
  observe::Counter& closed_for_room_;
};

}  // namespace seedance::sources
