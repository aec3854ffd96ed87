#include "core/commit_retry.h"

#include <chrono>
#include <string>
#include <thread>

namespace seedance {

bool CommitUntilDeadline(const std::function<Status()>& commit,
                         const std::function<bool()>& past_deadline, std::string_view component,
                         std::string_view what, util::LogLimiter& limiter) {
  const std::string name(component);
  while (true) {
    Status s = commit();
    if (s.ok()) return true;
    uint64_t suppressed = 0;
    if (limiter.Allow(name, &suppressed)) {
      SEEDANCE_LOG_ERROR(name,
                         "cannot write {}: {}; retrying (sources are not acknowledged meanwhile)",
                         what, s.message());
    }
    if (past_deadline()) {
      SEEDANCE_LOG_ERROR(name,
                         "shutdown deadline reached while {} cannot be written; the last batch "
                         "stays unacknowledged (its sources send it again)",
                         what);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace seedance
