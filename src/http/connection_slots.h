// ConnectionSlots: what a server's connections may cost, and which one goes when a new client
// needs room. Used by the http source and the metrics listener, where anyone who reaches the
// port is untrusted.
//
// Bounds: at most `max_total` connections, and at most `max_per_client` from one client address
// (IPv4 or IPv6, the port aside). A connection is idle while it waits for a request — a new one
// before its first, a keep-alive one between requests, a client that has sent part of a header —
// and busy from a whole header to its answer. When a new connection needs room, the one idle
// longest goes: of that client when it holds its share, else of all. So connections held open
// and silent (1,000 of them in the test) delay nobody: a new client is served at once, and the
// silent ones churn through each other. With every connection in question busy, the total
// limit leaves the next client in the kernel's backlog until one ends, and the per-client one
// refuses that client's connection (closed at once).
//
// Not thread-safe: the server's event loop only.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp uses std::exchange without including it.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>

namespace seedance::http {

class ConnectionSlots {
 public:
  using Id = uint64_t;
  ConnectionSlots(size_t max_total, size_t max_per_client);

  // Registers a connection from `client`, idle; `close` ends it (its server then calls
  // Remove()). ShutdownCloser(fd) is the usual one.
  Id Add(const std::string& client, std::function<void()> close);
  void Remove(Id id);
  void SetIdle(Id id, bool idle);

  size_t open() const { return entries_.size(); }
  size_t open_from(const std::string& client) const;
  bool full() const { return entries_.size() >= max_total_; }
  bool client_full(const std::string& client) const { return open_from(client) >= max_per_client_; }
  size_t max_total() const { return max_total_; }
  size_t max_per_client() const { return max_per_client_; }

  // Closes the connection idle longest, of `client` only when it is given (not yet closing).
  // False when none is idle.
  bool CloseIdlest(const std::string* client = nullptr);

 private:
  struct Entry {
    std::string client;
    std::function<void()> close;
    bool idle = true;
    bool closing = false;
    std::chrono::steady_clock::time_point idle_since;
  };

  const size_t max_total_;
  const size_t max_per_client_;
  Id next_id_ = 1;
  std::unordered_map<Id, Entry> entries_;
  std::unordered_map<std::string, size_t> per_client_;
};

enum class Admission { kAdmit, kRefuse, kStopped };

// What a server's accept loop does with a connection just accepted from `client`: makes room
// for it (closing the connection idle longest, of that client when it holds its share, else of
// all, and waiting for it to end) and says whether to serve it. With every connection in
// question busy: refused when the client holds its share, else it waits for one to end (the
// accept loop with it: further clients wait in the kernel's backlog). `slot_freed` is a timer
// that never expires, cancelled (cancel_one) whenever a connection ends; `on_shed(refused)`
// counts what was closed. Event loop only.
boost::asio::awaitable<Admission> Admit(ConnectionSlots& slots,
                                        boost::asio::steady_timer& slot_freed,
                                        const std::string& client, const bool& stopped,
                                        std::function<void(bool refused)> on_shed);

// A `close` for Add(): shuts the socket down both ways, so the read waiting on it ends (the fd
// stays valid until its owner closes it: no race with a descriptor reused meanwhile).
std::function<void()> ShutdownCloser(int fd);

// The address of the peer of socket `fd`, without the port ("" when unknown).
std::string PeerAddress(int fd);

}  // namespace seedance::http
