#include "processors/lua/lua_reloader.h"

#include <sys/stat.h>

#include "observe/metrics.h"
#include "util/fd_io.h"
#include "util/log.h"
#include "util/thread_name.h"

namespace seedance::processors {

bool StatFile(const std::string& path, FileSignature* sig) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  sig->mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  sig->size = st.st_size;
  sig->inode = st.st_ino;
  return true;
}

Result<std::string> ReadScriptFile(const std::string& path) {
  return util::ReadRegularFile(path, kMaxScriptBytes, "script");
}

ScriptReloader::ScriptReloader(std::string path, FileSignature current,
                               std::chrono::nanoseconds every, LuaScriptOptions options,
                               std::string log_name, observe::Counter* ok, observe::Counter* failed)
    : path_(std::move(path)),
      signature_(current),
      every_(every),
      options_(std::move(options)),
      log_name_(std::move(log_name)),
      ok_(ok),
      failed_(failed),
      thread_([this] {
        util::NameThisThread("sd-lua-reload");
        Watch();
      }) {}

ScriptReloader::~ScriptReloader() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

std::optional<ScriptReloader::Version> ScriptReloader::TakeReady() {
  std::lock_guard<std::mutex> lock(mu_);
  std::optional<Version> v = std::move(ready_);
  ready_.reset();
  return v;
}

void ScriptReloader::Watch() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!wake_.wait_for(lock, every_, [this] { return stop_; })) {
    lock.unlock();
    FileSignature sig;
    if (StatFile(path_, &sig) && !(sig == signature_)) {
      signature_ = sig;  // try each version once
      auto code = ReadScriptFile(path_);
      Result<std::unique_ptr<LuaScript>> loaded =
          code ? LuaScript::Load(*code, path_, options_)
               : Result<std::unique_ptr<LuaScript>>(code.error());
      if (!loaded) {
        failed_->Add();
        SEEDANCE_LOG_ERROR(log_name_,
                           "reload of {} refused, the previous version keeps running: {}", path_,
                           loaded.error().message());
      } else {
        lock.lock();
        ready_ = Version{std::move(loaded).value(), std::move(code).value()};
        lock.unlock();
        ok_->Add();
      }
    }
    lock.lock();
  }
}

}  // namespace seedance::processors
