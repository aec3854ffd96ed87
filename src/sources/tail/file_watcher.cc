#include "sources/tail/file_watcher.h"

#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

#include "util/log.h"

namespace seedance::sources {

FileWatcher::FileWatcher(boost::asio::io_context& io, std::string name,
                         std::chrono::nanoseconds interval, std::function<void()> scan)
    : name_(std::move(name)),
      interval_(interval),
      scan_(std::move(scan)),
      timer_(io),
      notify_(io) {}

void FileWatcher::Start(const std::vector<std::string>& globs, bool use_inotify) {
  if (use_inotify) WatchDirectories(globs);
  ScanIn(interval_);
}

void FileWatcher::Stop() {
  stopped_ = true;
  timer_.cancel();
  boost::system::error_code ec;
  notify_.close(ec);
}

void FileWatcher::WatchDirectories(const std::vector<std::string>& globs) {
  const int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) {
    SEEDANCE_LOG_WARN(name_, "inotify unavailable ({}); polling every {} ms", std::strerror(errno),
                      std::chrono::duration_cast<std::chrono::milliseconds>(interval_).count());
    return;
  }
  std::set<std::string> dirs;
  for (const std::string& g : globs) {
    const std::string dir = std::filesystem::path(g).parent_path().string();
    if (dir.find_first_of("*?[") == std::string::npos) dirs.insert(dir.empty() ? "." : dir);
  }
  for (const std::string& d : dirs) {
    ::inotify_add_watch(
        fd, d.c_str(),
        IN_CREATE | IN_MODIFY | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE | IN_CLOSE_WRITE);
  }
  notify_.assign(fd);
  WaitForChange();
}

void FileWatcher::WaitForChange() {
  notify_.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                     [this](const boost::system::error_code& ec) {
                       if (ec || stopped_) return;
                       char events[4096];  // which file does not matter: the scan looks
                       while (::read(notify_.native_handle(), events, sizeof events) > 0) {
                       }
                       ScanIn(std::chrono::nanoseconds(0));
                       WaitForChange();
                     });
}

void FileWatcher::ScanIn(std::chrono::nanoseconds after) {
  if (stopped_) return;
  const auto when = std::chrono::steady_clock::now() + after;
  if (scan_pending_ && when >= timer_.expiry()) return;
  scan_pending_ = true;
  timer_.expires_at(when);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    scan_pending_ = false;
    scan_();
    ScanIn(interval_);
  });
}

}  // namespace seedance::sources
