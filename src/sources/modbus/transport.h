// Transport: one Modbus request at a time to a device over TCP (MBAP) or a serial line (RTU),
// on the event loop. The connection is made on demand: a request with no connection connects
// first; after a failed connect, requests fail at once (kUnavailable) until the backoff
// (100 ms, doubled per failure up to `reconnect_max`) has passed, so a dead device is not
// hammered by every poll.
//
// The answer is checked against the request (codec.h): what a device sends is untrusted. A
// stream that can no longer be trusted (an answer with another transaction id or unit, a header
// that is not Modbus, a timeout after which a late answer could arrive) is closed; the next
// request reconnects.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "modbus/codec.h"
#include "seedance/result.h"

namespace seedance {
class EventLoop;
}

namespace seedance::sources::modbus_source {

struct ModbusSettings;

// Why a request failed, for metrics ("timeout", ...) and the retry rule.
enum class Failure {
  kUnreachable,  // no connection could be made (or the backoff after one has not passed)
  kTimeout,      // no (whole) answer within `timeout`
  kDropped,      // the connection closed or failed while the request was out
  kGarbled,      // an answer that is not the answer to the request (hostile or noise)
  kCrc,          // rtu: a frame whose CRC does not match
};
std::string_view FailureName(Failure f);

struct Outcome {
  bool ok = false;
  Failure failure = Failure::kTimeout;  // when !ok
  std::string detail;                   // when !ok: what was wrong, for the log
  modbus::ReadAnswer answer;            // when ok (may be an exception answer)
};

class Transport {
 public:
  using Done = std::function<void(Outcome)>;
  virtual ~Transport() = default;
  // Sends a read of `count` items of `area` at `address` to `unit` and calls `done` on the
  // loop with the checked answer or why there is none. One request at a time.
  virtual void Read(uint8_t unit, modbus::Area area, uint16_t address, uint16_t count,
                    Done done) = 0;
  // Connected (or the serial line open) now.
  virtual bool connected() const = 0;
  // Closes the connection; a request in flight completes with kDropped. Callbacks are not
  // called after Shutdown().
  virtual void Shutdown() = 0;
};

// Shared: the loop's handlers of a request keep the transport alive until they have run.
std::shared_ptr<Transport> MakeTcpTransport(EventLoop& loop, const ModbusSettings& settings);
std::shared_ptr<Transport> MakeRtuTransport(EventLoop& loop, const ModbusSettings& settings);

// The reconnect backoff both transports share: 100 ms doubled per failure up to `max`.
class ReconnectBackoff {
 public:
  explicit ReconnectBackoff(std::chrono::nanoseconds max) : max_(max) {}
  bool Waiting(std::chrono::steady_clock::time_point now) const { return now < next_; }
  void Failed(std::chrono::steady_clock::time_point now) {
    delay_ = delay_.count() == 0 ? std::chrono::milliseconds(100) : std::min(delay_ * 2, max_);
    next_ = now + delay_;
  }
  void Succeeded() {
    delay_ = std::chrono::nanoseconds(0);
    next_ = {};
  }

 private:
  std::chrono::nanoseconds max_;
  std::chrono::nanoseconds delay_{0};
  std::chrono::steady_clock::time_point next_{};
};

}  // namespace seedance::sources::modbus_source
