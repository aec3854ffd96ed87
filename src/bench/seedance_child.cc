#include "bench/seedance_child.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cstring>
#include <fstream>
#include <thread>

extern char** environ;

namespace seedance::bench {

Result<std::unique_ptr<SeedanceChild>> SeedanceChild::Spawn(const std::string& exe,
                                                            const std::vector<std::string>& args,
                                                            const std::string& workdir,
                                                            const std::string& log_path) {
  std::unique_ptr<SeedanceChild> child(new SeedanceChild());
  child->notify_path_ = workdir + "/notify.sock";
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (child->notify_path_.size() >= sizeof(addr.sun_path)) {
    return Status(StatusCode::kInvalidArgument, "work directory path too long: " + workdir);
  }
  std::memcpy(addr.sun_path, child->notify_path_.c_str(), child->notify_path_.size() + 1);
  child->notify_fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ::unlink(child->notify_path_.c_str());
  if (child->notify_fd_ < 0 ||
      ::bind(child->notify_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return Status(StatusCode::kUnavailable,
                  fmt::format("cannot create {}: {}", child->notify_path_, std::strerror(errno)));
  }

  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "NOTIFY_SOCKET=", 14) != 0) env_strings.emplace_back(*e);
  }
  env_strings.push_back("NOTIFY_SOCKET=" + child->notify_path_);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_strings{exe};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_addchdir_np(&actions, workdir.c_str());
  // The bench blocks SIGINT/SIGTERM for its own handling; the child starts with none blocked.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  child->spawned_ = std::chrono::steady_clock::now();
  int rc = ::posix_spawn(&child->pid_, exe.c_str(), &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    child->pid_ = -1;
    return Status(StatusCode::kUnavailable,
                  fmt::format("cannot start {}: {}", exe, std::strerror(rc)));
  }
  return child;
}

SeedanceChild::~SeedanceChild() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (notify_fd_ >= 0) ::close(notify_fd_);
  if (!notify_path_.empty()) ::unlink(notify_path_.c_str());
}

Result<double> SeedanceChild::WaitReady(std::chrono::milliseconds timeout) {
  const auto deadline = spawned_ + timeout;
  char buf[512];
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{notify_fd_, POLLIN, 0};
    if (::poll(&p, 1, 10) == 1) {
      ssize_t n = ::recv(notify_fd_, buf, sizeof buf - 1, 0);
      const auto now = std::chrono::steady_clock::now();
      if (n > 0 &&
          std::string_view(buf, static_cast<size_t>(n)).find("READY=1") != std::string_view::npos) {
        return std::chrono::duration<double, std::milli>(now - spawned_).count();
      }
    }
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return Status(StatusCode::kUnavailable,
                    WIFEXITED(status) ? fmt::format("seedance exited with {}", WEXITSTATUS(status))
                                      : "seedance was killed by a signal");
    }
  }
  return Status(StatusCode::kUnavailable,
                fmt::format("seedance was not ready within {} ms", timeout.count()));
}

int64_t SeedanceChild::RssKb() const {
  if (pid_ <= 0) return 0;
  std::ifstream in(fmt::format("/proc/{}/status", pid_));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atoll(line.c_str() + 6);
  }
  return 0;
}

SeedanceChild::Exit SeedanceChild::Stop(std::chrono::milliseconds timeout) {
  Exit exit;
  if (pid_ <= 0) return exit;
  ::kill(pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  rusage usage{};
  while (true) {
    pid_t r = ::wait4(pid_, &exit.status, WNOHANG, &usage);
    if (r == pid_) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid_, SIGKILL);
      ::wait4(pid_, &exit.status, 0, &usage);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  pid_ = -1;
  exit.cpu_s = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
               static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  exit.max_rss_kb = usage.ru_maxrss;
  return exit;
}

}  // namespace seedance::bench
