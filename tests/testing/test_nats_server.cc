#include "testing/test_nats_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

namespace seedance::testing {
namespace {

const char* NatsServerPath() {
  for (const char* p :
       {"/usr/bin/nats-server", "/usr/sbin/nats-server", "/usr/local/bin/nats-server"}) {
    if (::access(p, X_OK) == 0) return p;
  }
  return nullptr;
}

int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  ::close(fd);
  return port;
}

bool Accepting(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

TestNatsServer::TestNatsServer(const std::string& dir) {
  const char* bin = NatsServerPath();
  if (bin == nullptr) {
    why_ = "nats-server is not installed (scripts/setup installs it)";
    return;
  }
  port_ = FreePort();
  const std::string conf = dir + "/nats.conf";
  {
    std::ofstream f(conf);
    f << "listen: 127.0.0.1:" << port_ << "\njetstream { store_dir: \"" << dir << "/js\" }\n";
  }
  const std::string log = dir + "/nats.log";
  pid_ = ::fork();
  if (pid_ == 0) {
    ::execl(bin, bin, "-c", conf.c_str(), "-l", log.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  for (int i = 0; i < 500 && !Accepting(port_); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!Accepting(port_)) {
    why_ = "nats-server did not start (see " + log + ")";
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
}

TestNatsServer::~TestNatsServer() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGCONT);
  ::kill(pid_, SIGTERM);
  ::waitpid(pid_, nullptr, 0);
}

void TestNatsServer::Pause() { ::kill(pid_, SIGSTOP); }
void TestNatsServer::Resume() { ::kill(pid_, SIGCONT); }

}  // namespace seedance::testing
