// SeedanceChild: the pipeline under test, run by `seedance bench` as a separate process so
// its memory and CPU are its own. Readiness comes over the systemd notification protocol
// ($NOTIFY_SOCKET, "READY=1"); stdout and stderr go to a log file.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "seedance/result.h"

namespace seedance::bench {

class SeedanceChild {
 public:
  struct Exit {
    int status = 0;          // as from waitpid
    double cpu_s = 0;        // user + system
    int64_t max_rss_kb = 0;  // peak resident set
  };

  // Starts `exe` with `args` in `workdir`; `log_path` takes its output.
  static Result<std::unique_ptr<SeedanceChild>> Spawn(const std::string& exe,
                                                      const std::vector<std::string>& args,
                                                      const std::string& workdir,
                                                      const std::string& log_path);
  ~SeedanceChild();  // kills the process if still running

  // Waits for READY=1. Returns the time from spawn to ready (ms); kUnavailable when the
  // process exited first or `timeout` passed.
  Result<double> WaitReady(std::chrono::milliseconds timeout);
  // Current resident set (VmRSS) in kB; 0 once the process is gone.
  int64_t RssKb() const;
  // SIGTERM, then SIGKILL after `timeout`; reaps the process.
  Exit Stop(std::chrono::milliseconds timeout);
  pid_t pid() const { return pid_; }

 private:
  SeedanceChild() = default;
  pid_t pid_ = -1;
  int notify_fd_ = -1;
  std::string notify_path_;
  std::chrono::steady_clock::time_point spawned_;
};

}  // namespace seedance::bench
