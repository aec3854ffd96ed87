// ScriptReloader: watches a script file from its own thread and loads each new version there,
// so that reading, compiling and running a new version's top-level code (all bounded: the
// file by kMaxScriptBytes, the code by the script's limits) never stall the processing thread.
// The old version keeps running until the processing thread takes the new one, ready to run,
// with TakeReady() between events.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "processors/lua/lua_script.h"
#include "seedance/result.h"

namespace seedance::observe {
class Counter;
}

namespace seedance::processors {

// Scripts are small; the limit keeps a wrong path (a log file) from costing memory and time.
inline constexpr size_t kMaxScriptBytes = 1 << 20;

// What identifies one version of a file.
struct FileSignature {
  int64_t mtime_ns = 0;
  int64_t size = -1;
  uint64_t inode = 0;
  bool operator==(const FileSignature&) const = default;
};

// False when `path` cannot be stat()ed.
bool StatFile(const std::string& path, FileSignature* sig);

// Reads a script file: a regular file of at most kMaxScriptBytes.
Result<std::string> ReadScriptFile(const std::string& path);

class ScriptReloader {
 public:
  struct Version {
    std::unique_ptr<LuaScript> script;
    std::string code;  // its source, to build a fresh state from
  };

  // Starts watching `path`, whose current version is `current`, every `every`.
  ScriptReloader(std::string path, FileSignature current, std::chrono::nanoseconds every,
                 LuaScriptOptions options, std::string log_name, observe::Counter* ok,
                 observe::Counter* failed);
  ~ScriptReloader();  // stops the thread and waits for it (a load in progress is bounded)
  ScriptReloader(const ScriptReloader&) = delete;
  ScriptReloader& operator=(const ScriptReloader&) = delete;

  // The newest version loaded since the last call, if any.
  std::optional<Version> TakeReady();

 private:
  void Watch();

  const std::string path_;
  FileSignature signature_;  // the watcher thread's
  const std::chrono::nanoseconds every_;
  const LuaScriptOptions options_;
  const std::string log_name_;
  observe::Counter* ok_;
  observe::Counter* failed_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;             // guarded by mu_
  std::optional<Version> ready_;  // guarded by mu_
  std::thread thread_;
};

}  // namespace seedance::processors
