// FileWatcher: when the tail source looks at its files. A scan every poll_interval, and at
// once when inotify reports a change in a directory of the globs (where inotify works; a glob
// whose directory part has wildcards is polled only). Scans never overlap and a scan asked
// for sooner replaces one planned later. Not thread-safe (the source's loop).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace seedance::sources {

class FileWatcher {
 public:
  // `scan` runs on the loop; `name` is the component's, for the log.
  FileWatcher(boost::asio::io_context& io, std::string name, std::chrono::nanoseconds interval,
              std::function<void()> scan);

  // Watches the directories of `globs` with inotify (when `use_inotify`), and plans the
  // periodic scans. The first scan is the caller's.
  void Start(const std::vector<std::string>& globs, bool use_inotify);
  // A scan `after` from now (0: at the loop's next turn), unless one is planned sooner.
  void ScanIn(std::chrono::nanoseconds after);
  void Stop();

 private:
  void WatchDirectories(const std::vector<std::string>& globs);
  void WaitForChange();

  const std::string name_;
  const std::chrono::nanoseconds interval_;
  const std::function<void()> scan_;
  boost::asio::steady_timer timer_;
  boost::asio::posix::stream_descriptor notify_;
  bool scan_pending_ = false;
  bool stopped_ = false;
};

}  // namespace seedance::sources
