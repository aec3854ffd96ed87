#include "testing/fault_file_system.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace seedance::testing {
namespace {

namespace fs = std::filesystem;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

bool Fail(int err) {
  errno = err;
  return false;
}

}  // namespace

FaultFileSystem::FaultFileSystem(std::string root) : root_(Normal(root)) { Snapshot(); }

std::string FaultFileSystem::Normal(const std::string& path) {
  return fs::path(path).lexically_normal().string();
}

std::string FaultFileSystem::Parent(const std::string& path) {
  return fs::path(path).parent_path().string();
}

void FaultFileSystem::Snapshot() {
  // Every regular file under root, but LOCK files, is managed and durable as it is.
  path_id_.clear();
  durable_content_.clear();
  durable_dirs_.clear();
  std::error_code ec;
  if (!fs::exists(root_, ec)) return;
  durable_dirs_[root_];
  for (auto it = fs::recursive_directory_iterator(root_, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const std::string path = Normal(it->path().string());
    if (it->is_directory()) {
      durable_dirs_[path];
      continue;
    }
    if (!it->is_regular_file() || it->path().filename() == "LOCK") continue;
    const uint64_t id = next_id_++;
    path_id_[path] = id;
    durable_content_[id] = ReadAll(path);
    durable_dirs_[Parent(path)][it->path().filename().string()] = id;
  }
}

void FaultFileSystem::FailNext(Op op, int err, int times, std::string path_part) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_[op] = {err, times};
  fail_path_[op] = std::move(path_part);
}

void FaultFileSystem::SetSpaceLimit(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  space_limit_ = bytes;
}

void FaultFileSystem::SetShortWrites(bool on) {
  std::lock_guard<std::mutex> lock(mu_);
  short_writes_ = on;
}

void FaultFileSystem::CrashAtOperation(uint64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  crash_at_ = n;
}

bool FaultFileSystem::crashed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return crashed_;
}

void FaultFileSystem::FailOperation(uint64_t n, int err) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_at_ = n;
  fail_at_errno_ = err;
}

uint64_t FaultFileSystem::operations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return operations_;
}

std::string FaultFileSystem::crash_point() const {
  std::lock_guard<std::mutex> lock(mu_);
  return crash_point_;
}

bool FaultFileSystem::Begin(Op op, const std::string& what) {
  if (crashed_) return Fail(EIO);
  ++operations_;
  if (crash_at_ != 0 && operations_ >= crash_at_) {
    crashed_ = true;
    crash_point_ = what;
    return Fail(EIO);
  }
  if (operations_ == fail_at_) return Fail(fail_at_errno_);
  auto it = fail_.find(op);
  if (it != fail_.end() && it->second.second > 0) {
    --it->second.second;
    return Fail(it->second.first);
  }
  return true;
}

uint64_t FaultFileSystem::UsedBytes() const {
  uint64_t used = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root_, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec)) used += it->file_size(ec);
  }
  return used;
}

int FaultFileSystem::Open(const std::string& raw_path, int flags, mode_t mode) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string path = Normal(raw_path);
  const bool mutating = (flags & (O_CREAT | O_TRUNC)) != 0;
  if (mutating && !Begin(Op::kCreate, "create " + path)) return -1;
  if (!mutating && !ReadAllowed(Op::kOpen, path)) return -1;
  const int fd = storage::PosixFileSystem().Open(path, flags, mode);
  if (fd < 0) return -1;
  auto it = path_id_.find(path);
  uint64_t id;
  if (it != path_id_.end()) {
    id = it->second;
  } else {
    id = next_id_++;  // created now (or not managed before): not durable until synced
    path_id_[path] = id;
  }
  fds_[fd] = {path, id};
  return fd;
}

int FaultFileSystem::Close(int fd) {
  std::lock_guard<std::mutex> lock(mu_);
  fds_.erase(fd);
  return ::close(fd);
}

ssize_t FaultFileSystem::Write(int fd, const void* data, size_t size) {
  return WriteAt(fd, data, size, -1);
}

ssize_t FaultFileSystem::PWrite(int fd, const void* data, size_t size, off_t offset) {
  return WriteAt(fd, data, size, offset);
}

ssize_t FaultFileSystem::WriteAt(int fd, const void* data, size_t size, off_t offset) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string path = fds_.count(fd) ? fds_[fd].first : "?";
  const auto write = [&](size_t n) {
    return offset < 0 ? ::write(fd, data, n) : ::pwrite(fd, data, n, offset);
  };
  if (crashed_) {
    errno = EIO;
    return -1;
  }
  ++operations_;
  if (crash_at_ != 0 && operations_ >= crash_at_) {
    // Torn: half of it reaches the file, then the process is gone.
    crashed_ = true;
    crash_point_ = "write " + path;
    if (size > 1) (void)!write(size / 2);
    errno = EIO;
    return -1;
  }
  if (operations_ == fail_at_) {
    errno = fail_at_errno_;
    return -1;
  }
  auto it = fail_.find(Op::kWrite);
  if (it != fail_.end() && it->second.second > 0) {
    --it->second.second;
    errno = it->second.first;
    return -1;
  }
  size_t n = size;
  if (short_writes_ && n > 1) n /= 2;
  if (space_limit_ != UINT64_MAX) {
    // Only bytes past the file's end take space: a PWrite in place needs none (storage's
    // Writes all append).
    struct stat st {};
    const uint64_t in_place = offset >= 0 && ::fstat(fd, &st) == 0 && st.st_size > offset
                                  ? static_cast<uint64_t>(st.st_size - offset)
                                  : 0;
    const uint64_t used = UsedBytes();
    const uint64_t room = used >= space_limit_ ? 0 : space_limit_ - used;
    if (room == 0 && in_place == 0) {
      errno = ENOSPC;
      return -1;
    }
    n = static_cast<size_t>(std::min<uint64_t>(n, in_place + room));
  }
  return write(n);
}

ssize_t FaultFileSystem::PRead(int fd, void* data, size_t size, off_t offset) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = fds_.find(fd);
    if (!ReadAllowed(Op::kRead, it == fds_.end() ? std::string() : it->second.first)) return -1;
  }
  return ::pread(fd, data, size, offset);
}

bool FaultFileSystem::ReadAllowed(Op op, const std::string& path) {  // crashes spare reads
  auto it = fail_.find(op);
  auto part = fail_path_.find(op);
  if (it != fail_.end() && it->second.second > 0 &&
      (part == fail_path_.end() || path.find(part->second) != std::string::npos)) {
    --it->second.second;
    return Fail(it->second.first);
  }
  return true;
}

int FaultFileSystem::Fdatasync(int fd) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = fds_.find(fd);
  if (!Begin(Op::kFdatasync, "fdatasync " + (it == fds_.end() ? "?" : it->second.first))) {
    return -1;
  }
  if (::fdatasync(fd) != 0) return -1;
  if (it != fds_.end()) {  // the file as it is now (through /proc: fd may be write-only)
    durable_content_[it->second.second] = ReadAll("/proc/self/fd/" + std::to_string(fd));
  }
  return 0;
}

int FaultFileSystem::Ftruncate(int fd, off_t size) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!Begin(Op::kFtruncate, "ftruncate " + (fds_.count(fd) ? fds_[fd].first : "?"))) return -1;
  return ::ftruncate(fd, size);
}

int FaultFileSystem::Rename(const std::string& raw_from, const std::string& raw_to) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string from = Normal(raw_from);
  const std::string to = Normal(raw_to);
  if (!Begin(Op::kRename, "rename " + from + " " + to)) return -1;
  if (::rename(from.c_str(), to.c_str()) != 0) return -1;
  auto it = path_id_.find(from);
  if (it != path_id_.end()) {
    path_id_[to] = it->second;
    path_id_.erase(from);
  }
  return 0;
}

int FaultFileSystem::Unlink(const std::string& raw_path) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string path = Normal(raw_path);
  if (!Begin(Op::kUnlink, "unlink " + path)) return -1;
  if (::unlink(path.c_str()) != 0) return -1;
  path_id_.erase(path);
  return 0;
}

int FaultFileSystem::SyncDir(const std::string& raw_dir) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string dir = Normal(raw_dir);
  if (!Begin(Op::kSyncDir, "sync directory " + dir)) return -1;
  if (storage::PosixFileSystem().SyncDir(dir) != 0) return -1;
  auto& entries = durable_dirs_[dir];
  entries.clear();
  for (const auto& [path, id] : path_id_) {
    if (Parent(path) == dir) entries[fs::path(path).filename().string()] = id;
  }
  return 0;
}

void FaultFileSystem::DropUnsyncedData() {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [fd, what] : fds_) ::close(fd);
  fds_.clear();
  for (const auto& [path, id] : path_id_) ::unlink(path.c_str());
  for (const auto& [dir, entries] : durable_dirs_) {
    for (const auto& [name, id] : entries) {
      const std::string path = dir + "/" + name;
      ::unlink(path.c_str());  // a managed file renamed over after the last sync
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      auto content = durable_content_.find(id);
      if (content != durable_content_.end()) out << content->second;
    }
  }
  crashed_ = false;
  crash_at_ = 0;
  fail_at_ = 0;
  operations_ = 0;
  fail_.clear();
  fail_path_.clear();
  Snapshot();
}

}  // namespace seedance::testing
