#include "util/log_limiter.h"

namespace seedance::util {

bool LogLimiter::Allow(const std::string& key, uint64_t* suppressed, Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = slots_.find(key);
  if (it != slots_.end()) return Take(it->second, suppressed, now);
  if (slots_.size() >= kMaxKeys) ForgetIdle(now);
  if (slots_.size() >= kMaxKeys) return Take(shared_, suppressed, now);
  if (!Take(slots_[key], suppressed, now)) return false;
  // What the shared slot held back is reported with the next new key's line.
  *suppressed += shared_.suppressed;
  shared_.suppressed = 0;
  return true;
}

size_t LogLimiter::keys() const {
  std::lock_guard<std::mutex> lock(mu_);
  return slots_.size();
}

bool LogLimiter::Take(Slot& slot, uint64_t* suppressed, Clock::time_point now) {
  if (slot.seen && now - slot.last < interval_) {
    ++slot.suppressed;
    return false;
  }
  *suppressed = slot.suppressed;
  slot.suppressed = 0;
  slot.last = now;
  slot.seen = true;
  return true;
}

void LogLimiter::ForgetIdle(Clock::time_point now) {
  if (forgot_ && now - forgot_at_ < interval_) return;
  forgot_ = true;
  forgot_at_ = now;
  // Nothing held back and its interval over: its next line would be let through as a new
  // key's would. A key with lines held back is kept, to report them.
  std::erase_if(slots_, [&](const auto& entry) {
    return entry.second.suppressed == 0 && now - entry.second.last >= interval_;
  });
}

}  // namespace seedance::util
