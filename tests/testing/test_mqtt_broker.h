// A real mosquitto broker for C++ tests: a child process on a free 127.0.0.1 port with its own
// configuration file in `dir`. Reload() sends SIGHUP (mosquitto then reads its password and
// ACL files again); Pause() and Resume() stop and continue it. available() is false, with the
// reason, where mosquitto is not installed: the test says it skipped and why.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

namespace seedance::testing {

class TestMqttBroker {
 public:
  // `extra`: configuration lines after the listener (e.g. password_file, acl_file).
  TestMqttBroker(const std::string& dir, const std::string& extra);
  ~TestMqttBroker();
  TestMqttBroker(const TestMqttBroker&) = delete;
  TestMqttBroker& operator=(const TestMqttBroker&) = delete;

  bool available() const { return pid_ > 0; }
  const std::string& why_unavailable() const { return why_; }
  int port() const { return port_; }
  std::string uri() const { return "tcp://127.0.0.1:" + std::to_string(port_); }
  void Reload();
  // SIGSTOP: it holds its connections and answers nothing, as a hung broker does; Resume()
  // lets it go on (SIGCONT).
  void Pause();
  void Resume();

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  std::string why_;
};

// Writes a mosquitto password file `path` with `user`:`password` (mosquitto_passwd).
bool WriteMosquittoPasswords(const std::string& path,
                             const std::vector<std::pair<std::string, std::string>>& users);

}  // namespace seedance::testing
