// HttpListener: the small HTTP server for /metrics (Prometheus text), /healthz and /tap (the
// events at named points of the pipeline, streamed as NDJSON for `seedance tap`).
//
// Runs on the event loop (http/server.h). Anyone who can reach the port is untrusted, so what
// a client can cost is bounded: at most kMaxListenerConnections connections,
// kMaxListenerConnectionsPerClient from one address, the one idle longest closed when a new
// client needs room (http/connection_slots.h: connections held silent cannot keep /healthz
// from a supervisor; with every one busy the next client waits in the kernel's backlog),
// request headers of kMaxListenerHeaderBytes, bodies of kMaxListenerBodyBytes (413 beyond),
// and kListenerIdleTimeout for a whole request. Taps: at most kMaxTaps (observe/tap_hub.h, 503
// beyond), each disconnected when its client reads nothing for kTapStallTimeout. /reload:
// POST asks for a whole-config reload (core/pipeline_host.h), GET says how the last went.
// When the listener listens beyond loopback, /tap and /reload need `metrics.token` as a bearer
// token (403 without one configured, 401 for a wrong one); /metrics and /healthz need none.
// Thread-compatible: create, Start, Stop and SetToken on the loop thread.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "http/server.h"
#include "observe/metrics.h"
#include "observe/tap_hub.h"
#include "seedance/result.h"
#include "util/event_loop.h"

namespace seedance::observe {

inline constexpr int kMaxListenerConnections = 16;
inline constexpr int kMaxListenerConnectionsPerClient = 8;
inline constexpr size_t kMaxListenerHeaderBytes = 8 * 1024;
inline constexpr size_t kMaxListenerBodyBytes = 1024;
inline constexpr std::chrono::seconds kListenerIdleTimeout{10};
inline constexpr std::chrono::seconds kTapStallTimeout{60};
// A tap with nothing to send writes an empty line this often, so a client that went away is
// noticed (and its tap closed) on an idle pipeline too.
inline constexpr std::chrono::seconds kTapHeartbeat{5};

struct ListenerOptions {
  std::function<bool()> healthy;  // answers /healthz: true → 200 "ok", false → 503; unset: ok
  TapHub* taps = nullptr;         // null: no /tap
  std::string token;              // metrics.token
  // POST /reload asks for a reload (202); GET /reload answers reload_state() (JSON). Unset:
  // no /reload.
  std::function<void()> request_reload;
  std::function<std::string()> reload_state;
};

class HttpListener {
 public:
  HttpListener(EventLoop& loop, MetricsRegistry& metrics, ListenerOptions options);
  ~HttpListener();

  // Binds `address` ("127.0.0.1:9464", "[::1]:9464", ":9464" = all interfaces). Returns the
  // bound port (useful with port 0) or kInvalidArgument / kUnavailable.
  Result<uint16_t> Start(const std::string& address);
  // Stops accepting and ends every tap.
  void Stop();
  // metrics.token changed by a reload: taps and reloads opened from now on need this one.
  void SetToken(std::string token);

 private:
  struct State;
  std::shared_ptr<State> state_;
  std::unique_ptr<http::Server> server_;
};

}  // namespace seedance::observe
