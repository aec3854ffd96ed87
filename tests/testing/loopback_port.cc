#include "testing/loopback_port.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <random>
#include <set>
#include <string>

namespace seedance::testing {
namespace {

// The same scheme, lock directory and range as tests/testing/ports.py, so that the Python and
// C++ test processes running beside each other reserve their ports against one another.
constexpr int kLowestPort = 10000;

sockaddr_in Loopback(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  return a;
}

bool Bindable(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const sockaddr_in a = Loopback(port);
  const bool ok = ::bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

// The port's lock file, locked by this process (kept open until it exits), or -1 when another
// process holds it.
int Reserve(int port) {
  const std::string path = PortLockPath(port);
  ::mkdir(path.substr(0, path.rfind('/')).c_str(), 0777);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) return -1;
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

int KernelPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a = Loopback(0);
  socklen_t len = sizeof a;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  ::close(fd);
  return port;
}

}  // namespace

int FreeLoopbackPort() {
  static std::mutex mu;
  static std::set<int> handed_out;
  static std::mt19937 rng{std::random_device{}()};
  const std::lock_guard lock(mu);
  const int high = EphemeralPortRangeLow();
  if (high - kLowestPort >= 1000) {
    std::uniform_int_distribution<int> draw(kLowestPort, high - 1);
    for (int i = 0; i < 1000; ++i) {  // bounded: each try is one bind
      const int port = draw(rng);
      if (handed_out.contains(port)) continue;
      const int lock_fd = Reserve(port);
      if (lock_fd < 0) continue;
      if (!Bindable(port)) {
        ::close(lock_fd);
        continue;
      }
      handed_out.insert(port);  // lock_fd stays open: the reservation lasts until exit
      return port;
    }
  }
  // No room below the ephemeral range here: the kernel's pick, never twice in this process.
  for (int i = 0; i < 1000; ++i) {
    const int port = KernelPort();
    if (port != 0 && handed_out.insert(port).second) return port;
  }
  return 0;
}

bool AcceptingOnLoopback(int port) {
  const int fd = ConnectLoopback(port);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

int ConnectLoopback(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  const sockaddr_in a = Loopback(port);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

int EphemeralPortRangeLow() {
  int low = 32768;
  if (FILE* f = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r")) {
    if (std::fscanf(f, "%d", &low) != 1) low = 32768;
    std::fclose(f);
  }
  return low;
}

std::string PortLockPath(int port) {
  const char* tmp = std::getenv("TMPDIR");
  return std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/seedance-test-ports/" +
         std::to_string(port);
}

}  // namespace seedance::testing
