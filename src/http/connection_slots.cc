#include "http/connection_slots.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <utility>

namespace seedance::http {

ConnectionSlots::ConnectionSlots(size_t max_total, size_t max_per_client)
    : max_total_(std::max<size_t>(1, max_total)),
      max_per_client_(std::max<size_t>(1, max_per_client)) {}

ConnectionSlots::Id ConnectionSlots::Add(const std::string& client, std::function<void()> close) {
  const Id id = next_id_++;
  entries_.emplace(id, Entry{.client = client,
                             .close = std::move(close),
                             .idle_since = std::chrono::steady_clock::now()});
  ++per_client_[client];
  return id;
}

void ConnectionSlots::Remove(Id id) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  auto c = per_client_.find(it->second.client);
  if (c != per_client_.end() && --c->second == 0) per_client_.erase(c);
  entries_.erase(it);
}

void ConnectionSlots::SetIdle(Id id, bool idle) {
  auto it = entries_.find(id);
  if (it == entries_.end() || it->second.idle == idle) return;
  it->second.idle = idle;
  if (idle) it->second.idle_since = std::chrono::steady_clock::now();
}

size_t ConnectionSlots::open_from(const std::string& client) const {
  auto it = per_client_.find(client);
  return it == per_client_.end() ? 0 : it->second;
}

bool ConnectionSlots::CloseIdlest(const std::string* client) {
  // A scan: it runs only when a limit is reached, over at most max_total connections.
  Entry* idlest = nullptr;
  for (auto& [id, e] : entries_) {
    if (!e.idle || e.closing || (client != nullptr && e.client != *client)) continue;
    if (idlest == nullptr || e.idle_since < idlest->idle_since) idlest = &e;
  }
  if (idlest == nullptr) return false;
  idlest->closing = true;
  idlest->close();  // may not call Remove() at once: the entry stays valid until it does
  return true;
}

boost::asio::awaitable<Admission> Admit(ConnectionSlots& slots,
                                        boost::asio::steady_timer& slot_freed,
                                        const std::string& client, const bool& stopped,
                                        std::function<void(bool refused)> on_shed) {
  boost::system::error_code ec;
  auto wait = [&]() {
    return slot_freed.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
  };
  if (slots.client_full(client)) {
    if (!slots.CloseIdlest(&client)) {
      on_shed(true);
      co_return Admission::kRefuse;
    }
    on_shed(false);
    while (slots.client_full(client) && !stopped) co_await wait();
  }
  bool closed_one = false;  // one at a time: the next wake may be that one ending
  while (slots.full() && !stopped) {
    if (!closed_one && slots.CloseIdlest()) {
      closed_one = true;
      on_shed(false);
    }
    co_await wait();  // a connection ended (not necessarily that one), or the server stops
  }
  co_return stopped ? Admission::kStopped : Admission::kAdmit;
}

std::function<void()> ShutdownCloser(int fd) {
  return [fd] { ::shutdown(fd, SHUT_RDWR); };
}

std::string PeerAddress(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return std::string();
  char text[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&addr)->sin_addr, text, sizeof text);
  } else if (addr.ss_family == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&addr)->sin6_addr, text, sizeof text);
  }
  return text;
}

}  // namespace seedance::http
