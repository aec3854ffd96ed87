#include "sources/tail/open_files.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "util/log.h"

namespace seedance::sources {

OpenFiles::OpenFiles(int64_t max_open_files, std::string name, observe::MetricsRegistry& metrics)
    : name_(std::move(name)),
      budget_(static_cast<size_t>(std::max<int64_t>(1, max_open_files))),
      full_budget_(budget_),
      open_(metrics.GetGauge("seedance_tail_files_open", "Files the tail source holds open.",
                             {{"component", name_}})),
      closed_for_room_(metrics.GetCounter("seedance_tail_files_closed_total",
                                          "Files the tail source closed to stay within "
                                          "max_open_files (opened again when they grow).",
                                          {{"component", name_}})) {}

void OpenFiles::LimitToDescriptors() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return;
  const uint64_t room =
      rl.rlim_cur > 2 * kReservedDescriptors ? rl.rlim_cur - kReservedDescriptors : rl.rlim_cur / 2;
  if (room >= budget_) return;
  SEEDANCE_LOG_WARN(name_,
                    "max_open_files {} lowered to {}: the descriptor limit is {}, and {} are kept "
                    "for the queue, sinks and listeners",
                    budget_, room, static_cast<uint64_t>(rl.rlim_cur), rl.rlim_cur - room);
  budget_ = full_budget_ = std::max<size_t>(1, static_cast<size_t>(room));
}

void OpenFiles::OutOfDescriptors(const TrackedFile* keep, int err, Clock::time_point now) {
  short_at_ = now;
  const size_t lowered = std::max<size_t>(1, lru_.size() / 2);
  if (lowered >= budget_) return;
  budget_ = lowered;
  size_t closed = 0;
  for (auto it = lru_.begin(); it != lru_.end() && lru_.size() > budget_;) {
    TrackedFile* t = *it++;  // Close() erases t's entry
    if (t == keep) continue;
    Close(*t);
    closed_for_room_.Add();
    ++closed;
  }
  SEEDANCE_LOG_WARN(name_,
                    "the process is out of descriptors ({}): max_open_files lowered to {}, {} "
                    "file(s) closed to leave descriptors to the queue, sinks and listeners (opened "
                    "again when they grow; raised again after {} s without a shortage)",
                    std::strerror(err), budget_, closed, kRaiseAfter.count());
}

void OpenFiles::RaiseWhenCalm(Clock::time_point now) {
  if (budget_ >= full_budget_ || now - short_at_ < kRaiseAfter) return;
  budget_ = std::min(full_budget_, 2 * budget_);
  short_at_ = now;
  SEEDANCE_LOG_INFO(name_,
                    "no shortage of descriptors for {} s: max_open_files raised to {} (of {})",
                    kRaiseAfter.count(), budget_, full_budget_);
}

void OpenFiles::Opened(TrackedFile& t, int fd) {
  t.fd = fd;
  t.lru = lru_.insert(lru_.end(), &t);
  open_.Set(static_cast<int64_t>(lru_.size()));
}

void OpenFiles::Touch(TrackedFile& t) { lru_.splice(lru_.end(), lru_, t.lru); }

void OpenFiles::Close(TrackedFile& t) {
  ::close(t.fd);
  t.fd = -1;
  lru_.erase(t.lru);
  open_.Set(static_cast<int64_t>(lru_.size()));
}

void OpenFiles::MakeRoom(const TrackedFile* keep,
                         const std::function<bool(const TrackedFile&)>& quiet) {
  if (lru_.size() < budget_) return;
  TrackedFile* victim = nullptr;
  size_t looked = 0;
  for (TrackedFile* t : lru_) {
    if (t == keep) continue;
    if (victim == nullptr) victim = t;  // the least recently active
    if (quiet(*t)) {
      victim = t;
      break;
    }
    if (++looked == kQuietLookahead) break;
  }
  if (victim == nullptr) return;
  Close(*victim);
  closed_for_room_.Add();
  if (!warned_) {
    warned_ = true;
    SEEDANCE_LOG_WARN(name_,
                      "more files than max_open_files ({}): the least recently active are closed "
                      "and opened again when they grow (logged once; "
                      "seedance_tail_files_closed_total)",
                      budget_);
  }
}

}  // namespace seedance::sources
