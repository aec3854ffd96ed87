#include "testing/test_nats_server.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "testing/loopback_port.h"

namespace seedance::testing {
namespace {

const char* NatsServerPath() {
  for (const char* p :
       {"/usr/bin/nats-server", "/usr/sbin/nats-server", "/usr/local/bin/nats-server"}) {
    if (::access(p, X_OK) == 0) return p;
  }
  return nullptr;
}

}  // namespace

TestNatsServer::TestNatsServer(const std::string& dir) {
  const char* bin = NatsServerPath();
  if (bin == nullptr) {
    why_ = "nats-server is not installed (scripts/setup installs it)";
    return;
  }
  port_ = FreeLoopbackPort();
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
  for (int i = 0; i < 500 && !AcceptingOnLoopback(port_); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!AcceptingOnLoopback(port_)) {
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
