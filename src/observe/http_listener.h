// HttpListener: the small HTTP server for /metrics (Prometheus text) and /healthz.
//
// Runs on the event loop; one coroutine per connection; GET only. Thread-compatible: create,
// Start and Stop on the loop thread.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "core/event_loop.h"
#include "observe/metrics.h"
#include "seedance/result.h"

namespace seedance::observe {

class HttpListener {
 public:
  // `healthy` answers /healthz: true → 200 "ok", false → 503.
  HttpListener(EventLoop& loop, MetricsRegistry& metrics, std::function<bool()> healthy);
  ~HttpListener();

  // Binds `address` ("127.0.0.1:9464", "[::1]:9464", ":9464" = all interfaces). Returns the
  // bound port (useful with port 0) or kInvalidArgument / kUnavailable.
  Result<uint16_t> Start(const std::string& address);
  void Stop();

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace seedance::observe
