// HttpListener: the small HTTP server for /metrics (Prometheus text) and /healthz.
//
// Runs on the event loop (http/server.h); GET and HEAD only. Anyone who can reach the port is
// untrusted, so what a client can cost is bounded: at most kMaxListenerConnections
// connections, kMaxListenerConnectionsPerClient from one address, the one idle longest closed
// when a new client needs room (http/connection_slots.h: connections held silent cannot keep
// /healthz from a supervisor; with every one busy the next client waits in the kernel's
// backlog), request headers of kMaxListenerHeaderBytes, bodies of kMaxListenerBodyBytes (413
// beyond), and kListenerIdleTimeout for a whole request. Thread-compatible: create, Start and
// Stop on the loop thread.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "http/server.h"
#include "observe/metrics.h"
#include "seedance/result.h"
#include "util/event_loop.h"

namespace seedance::observe {

inline constexpr int kMaxListenerConnections = 16;
inline constexpr int kMaxListenerConnectionsPerClient = 8;
inline constexpr size_t kMaxListenerHeaderBytes = 8 * 1024;
inline constexpr size_t kMaxListenerBodyBytes = 1024;
inline constexpr std::chrono::seconds kListenerIdleTimeout{10};

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
  std::unique_ptr<http::Server> server_;
};

}  // namespace seedance::observe
