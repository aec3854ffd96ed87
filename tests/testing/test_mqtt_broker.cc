#include "testing/test_mqtt_broker.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "testing/loopback_port.h"

namespace seedance::testing {
namespace {

const char* MosquittoPath() {
  for (const char* p : {"/usr/sbin/mosquitto", "/usr/bin/mosquitto", "/usr/local/sbin/mosquitto"}) {
    if (::access(p, X_OK) == 0) return p;
  }
  return nullptr;
}

}  // namespace

TestMqttBroker::TestMqttBroker(const std::string& dir, const std::string& extra) {
  const char* bin = MosquittoPath();
  if (bin == nullptr) {
    why_ = "mosquitto is not installed (scripts/setup installs it)";
    return;
  }
  port_ = FreeLoopbackPort();
  const std::string conf = dir + "/mosquitto.conf";
  {
    std::ofstream f(conf);
    f << "listener " << port_ << " 127.0.0.1\n";
    if (::geteuid() == 0) f << "user root\n";
    f << "persistence false\nlog_dest file " << dir << "/mosquitto.log\n" << extra;
  }
  pid_ = ::fork();
  if (pid_ == 0) {
    ::execl(bin, bin, "-c", conf.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  for (int i = 0; i < 500 && !AcceptingOnLoopback(port_); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!AcceptingOnLoopback(port_)) {
    why_ = "mosquitto did not start (see " + dir + "/mosquitto.log)";
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
}

TestMqttBroker::~TestMqttBroker() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGCONT);  // a paused broker would never take the SIGTERM
  ::kill(pid_, SIGTERM);
  ::waitpid(pid_, nullptr, 0);
}

void TestMqttBroker::Pause() {
  if (pid_ > 0) ::kill(pid_, SIGSTOP);
}

void TestMqttBroker::Resume() {
  if (pid_ > 0) ::kill(pid_, SIGCONT);
}

void TestMqttBroker::Reload() {
  if (pid_ > 0) ::kill(pid_, SIGHUP);
}

bool WriteMosquittoPasswords(const std::string& path,
                             const std::vector<std::pair<std::string, std::string>>& users) {
  std::remove(path.c_str());
  for (size_t i = 0; i < users.size(); ++i) {
    const std::string cmd = "mosquitto_passwd -b " + std::string(i == 0 ? "-c " : "") + path + " " +
                            users[i].first + " " + users[i].second + " >/dev/null 2>&1";
    if (std::system(cmd.c_str()) != 0) return false;
  }
  return ::chmod(path.c_str(), 0644) == 0;
}

}  // namespace seedance::testing
