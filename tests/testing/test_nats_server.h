// A real nats-server with JetStream for C++ tests: a child process on a free 127.0.0.1 port,
// its store in `dir`. Pause() stops it with SIGSTOP (it holds its connections and answers
// nothing, as a hung server does) and Resume() lets it go on. available() is false, with the
// reason, where nats-server is not installed: the test says it skipped and why.
#pragma once

#include <sys/types.h>

#include <string>

namespace seedance::testing {

class TestNatsServer {
 public:
  explicit TestNatsServer(const std::string& dir);
  ~TestNatsServer();
  TestNatsServer(const TestNatsServer&) = delete;
  TestNatsServer& operator=(const TestNatsServer&) = delete;

  bool available() const { return pid_ > 0; }
  const std::string& why_unavailable() const { return why_; }
  std::string url() const { return "nats://127.0.0.1:" + std::to_string(port_); }
  void Pause();
  void Resume();

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  std::string why_;
};

}  // namespace seedance::testing
