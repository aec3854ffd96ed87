// LogLimiter: lets a log line through at most once per interval per key ("logged at most
// every 10 s"), and says how many were held back when it next lets one through.
//
// A key may come from outside (a side output's reason quotes a payload, a script, a server),
// so what the limiter remembers is bounded: at most kMaxKeys keys. A key let through once and
// not seen again within its interval is forgotten (nothing is lost: it would be let through
// anyway), at most once per interval. While kMaxKeys keys are live, a new key shares one slot
// with every other new key (what it holds back is reported with the next line of a key with a
// slot of its own): a stream of distinct keys writes at most kMaxKeys + 1 lines per interval,
// whatever its rate. Thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

namespace seedance::util {

class LogLimiter {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr size_t kMaxKeys = 256;

  explicit LogLimiter(Clock::duration interval = std::chrono::seconds(10)) : interval_(interval) {}

  // Returns true when a line for `key` should be written now; `*suppressed` is set to the
  // number of lines for that key held back since the last one written.
  bool Allow(const std::string& key, uint64_t* suppressed) {
    return Allow(key, suppressed, Clock::now());
  }
  // As above, at `now` (tests drive time with it).
  bool Allow(const std::string& key, uint64_t* suppressed, Clock::time_point now);

  // Keys remembered now (at most kMaxKeys).
  size_t keys() const;

 private:
  struct Slot {
    Clock::time_point last{};
    uint64_t suppressed = 0;
    bool seen = false;
  };

  bool Take(Slot& slot, uint64_t* suppressed, Clock::time_point now);
  // Drops the keys that are as good as never seen; at most once per interval.
  void ForgetIdle(Clock::time_point now);

  const Clock::duration interval_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Slot> slots_;
  Slot shared_;  // every new key while kMaxKeys are live
  Clock::time_point forgot_at_{};
  bool forgot_ = false;
};

}  // namespace seedance::util
