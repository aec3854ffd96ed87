#include "storage/checkpoint_log.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "storage/crc32c.h"
#include "util/fd_io.h"
#include "util/little_endian.h"

namespace seedance::storage {
namespace {

constexpr size_t kHeader = 8;  // length + masked CRC
constexpr uint32_t kMaxRecord = 64u << 20;

Status IoError(const std::string& what, const std::string& path) {
  return Status(StatusCode::kUnavailable,
                fmt::format("checkpoint: {} {}: {}", what, path, std::strerror(errno)));
}

Status SyncDir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return IoError("open", dir);
  int rc = ::fsync(fd);
  ::close(fd);
  return rc == 0 ? Status::Ok() : IoError("fsync", dir);
}

}  // namespace

void CheckpointLog::Encode(std::string& out, bool put, std::string_view component,
                           std::string_view key, std::string_view value) {
  std::string body;
  body.push_back(put ? 1 : 2);
  util::PutFixed16(body, static_cast<uint16_t>(component.size()));
  body.append(component);
  util::PutFixed32(body, static_cast<uint32_t>(key.size()));
  body.append(key);
  body.append(value);
  util::PutFixed32(out, static_cast<uint32_t>(body.size()));
  util::PutFixed32(out, storage::MaskCrc(storage::Crc32c(body)));
  out.append(body);
}

Result<std::unique_ptr<CheckpointLog>> CheckpointLog::Open(const std::string& dir, Fsync fsync,
                                                           std::chrono::nanoseconds interval) {
  std::unique_ptr<CheckpointLog> log(new CheckpointLog());
  log->dir_ = dir;
  log->path_ = dir + "/state.log";
  log->fsync_ = fsync;
  log->fsync_interval_ = interval;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return Status(StatusCode::kUnavailable,
                  fmt::format("checkpoint: cannot create {}: {}", dir, ec.message()));
  }
  log->fd_ = ::open(log->path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (log->fd_ < 0) return IoError("open", log->path_);
  // One writer: a second process replaying (and truncating) a tail being written would
  // corrupt the first one's checkpoint.
  if (::flock(log->fd_, LOCK_EX | LOCK_NB) != 0) {
    return Status(StatusCode::kFailedPrecondition,
                  fmt::format("checkpoint {} is in use by another seedance process", log->path_));
  }
  SEEDANCE_RETURN_IF_ERROR(log->Replay());
  return log;
}

CheckpointLog::~CheckpointLog() {
  if (fd_ >= 0) {
    if (unsynced_) ::fdatasync(fd_);
    ::close(fd_);
  }
}

Status CheckpointLog::Replay() {
  struct stat st{};
  if (::fstat(fd_, &st) != 0) return IoError("stat", path_);
  std::string data(static_cast<size_t>(st.st_size), '\0');
  if (!data.empty() && ::pread(fd_, data.data(), data.size(), 0) != st.st_size) {
    return IoError("read", path_);
  }
  size_t pos = 0;
  while (pos + kHeader <= data.size()) {
    const uint32_t length = util::GetFixed32(data.data() + pos);
    const uint32_t crc = storage::UnmaskCrc(util::GetFixed32(data.data() + pos + 4));
    if (length < 7 || length > kMaxRecord || pos + kHeader + length > data.size()) break;
    std::string_view body(data.data() + pos + kHeader, length);
    if (storage::Crc32c(body) != crc) break;
    const bool put = body[0] == 1;
    const uint16_t comp_len = util::GetFixed16(body.data() + 1);
    if (3u + comp_len + 4u > body.size()) break;
    std::string component(body.substr(3, comp_len));
    const uint32_t key_len = util::GetFixed32(body.data() + 3 + comp_len);
    const size_t key_at = 3u + comp_len + 4u;
    if (key_at + key_len > body.size()) break;
    std::string key(body.substr(key_at, key_len));
    std::string_view value = body.substr(key_at + key_len);
    auto& entries = live_[component];
    auto it = entries.find(key);
    if (it != entries.end()) live_bytes_ -= it->first.size() + it->second.size() + component.size();
    if (put) {
      entries[key] = std::string(value);
      live_bytes_ += key.size() + value.size() + component.size();
    } else if (it != entries.end()) {
      entries.erase(it);
    }
    ++recovered_records_;
    pos += kHeader + length;
  }
  if (pos != data.size()) {
    truncated_tail_ = true;
    if (::ftruncate(fd_, static_cast<off_t>(pos)) != 0) return IoError("truncate", path_);
  }
  file_bytes_ = pos;
  if (::lseek(fd_, static_cast<off_t>(pos), SEEK_SET) < 0) return IoError("seek", path_);
  return Status::Ok();
}

void CheckpointLog::Put(std::string_view component, std::string_view key, std::string_view value) {
  auto& entries = live_[std::string(component)];
  auto it = entries.find(std::string(key));
  if (it != entries.end()) live_bytes_ -= it->first.size() + it->second.size() + component.size();
  if (value.empty()) {
    if (it == entries.end()) return;  // nothing to delete
    entries.erase(it);
  } else {
    entries[std::string(key)] = std::string(value);
    live_bytes_ += key.size() + value.size() + component.size();
  }
  Encode(pending_, !value.empty(), component, key, value);
}

Status CheckpointLog::Commit() {
  if (pending_.empty()) return Status::Ok();
  if (util::WriteAll(fd_, pending_) != 0) return IoError("write", path_);
  file_bytes_ += pending_.size();
  pending_.clear();
  unsynced_ = true;
  if (fsync_ == Fsync::kAlways) {
    if (::fdatasync(fd_) != 0) return IoError("fdatasync", path_);
    unsynced_ = false;
  }
  if (file_bytes_ > (1u << 20) && file_bytes_ > 4 * (live_bytes_ + 64)) return Compact();
  return Status::Ok();
}

void CheckpointLog::Tick() {
  if (!unsynced_ || fsync_ != Fsync::kInterval) return;
  auto now = std::chrono::steady_clock::now();
  if (now - last_sync_ < fsync_interval_) return;
  last_sync_ = now;
  if (::fdatasync(fd_) == 0) unsynced_ = false;
}

Status CheckpointLog::Compact() {
  std::string all;
  for (const auto& [component, entries] : live_) {
    for (const auto& [key, value] : entries) Encode(all, true, component, key, value);
  }
  const std::string tmp = path_ + ".tmp";
  int fd = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return IoError("open", tmp);
  if (util::WriteAll(fd, all) != 0 || ::fdatasync(fd) != 0) {
    ::close(fd);
    return IoError("write", tmp);
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0 || ::rename(tmp.c_str(), path_.c_str()) != 0) {
    ::close(fd);
    return IoError("rename", tmp);
  }
  ::close(fd_);
  fd_ = fd;
  file_bytes_ = all.size();
  unsynced_ = false;
  if (::lseek(fd_, 0, SEEK_END) < 0) return IoError("seek", path_);
  return SyncDir(dir_);
}

}  // namespace seedance::storage
