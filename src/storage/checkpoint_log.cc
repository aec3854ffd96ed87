#include "storage/checkpoint_log.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "storage/log_format.h"
#include "storage/record_scanner.h"
#include "util/crc32c.h"
#include "util/little_endian.h"

namespace seedance::storage {
namespace {

constexpr uint8_t kPut = 1;
constexpr uint8_t kDelete = 2;
// Ends a commit: the records since the previous one take effect together, or not at all.
constexpr uint8_t kCommitEnd = 3;

}  // namespace

Status CheckpointLog::Error(const std::string& what, const std::string& path) const {
  const int err = errno;
  std::string message = fmt::format("checkpoint: {} {}: {}", what, path, std::strerror(err));
  return IsNoSpace(err) ? ResourceExhaustedError(std::move(message))
                        : UnavailableError(std::move(message));
}

void CheckpointLog::Encode(std::string& out, bool put, std::string_view component,
                           std::string_view key, std::string_view value) {
  std::string body;
  util::PutFixed16(body, static_cast<uint16_t>(component.size()));
  body.append(component);
  util::PutFixed32(body, static_cast<uint32_t>(key.size()));
  body.append(key);
  body.append(value);
  EncodeRecord(next_sequence_++, put ? kPut : kDelete, body, out);
}

Result<std::unique_ptr<CheckpointLog>> CheckpointLog::Open(const std::string& dir, Fsync fsync,
                                                           std::chrono::nanoseconds interval,
                                                           FileSystem& fs) {
  std::unique_ptr<CheckpointLog> log(new CheckpointLog(fs));
  log->dir_ = dir;
  log->path_ = dir + "/state.log";
  log->fsync_ = fsync;
  log->fsync_interval_ = interval;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return UnavailableError(fmt::format("checkpoint: cannot create {}: {}", dir, ec.message()));
  }
  // One writer: a second process replaying (and truncating) a tail being written would
  // corrupt the first one's checkpoint.
  const std::string lock_path = dir + "/LOCK";
  log->lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (log->lock_fd_ < 0) return log->Error("open", lock_path);
  if (::flock(log->lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    return FailedPreconditionError(
        fmt::format("checkpoint {} is in use by another seedance process", log->path_));
  }
  log->fd_ = fs.Open(log->path_, O_RDWR | O_CREAT | O_APPEND, 0644);
  if (log->fd_ < 0) return log->Error("open", log->path_);
  // The file's name is durable before anything synced into it counts.
  if (fs.SyncDir(dir) != 0) return log->Error("sync directory", dir);
  SEEDANCE_RETURN_IF_ERROR(log->Replay());
  // A new file starts with an end of commit (an empty commit), so that a first commit torn by
  // a kill is not taken for a file written before end markers existed.
  if (log->file_bytes_ == 0) EncodeRecord(log->next_sequence_++, kCommitEnd, {}, log->pending_);
  return log;
}

CheckpointLog::~CheckpointLog() {
  if (fd_ >= 0) {
    if (unsynced_) fs_.Fdatasync(fd_);
    fs_.Close(fd_);
  }
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

bool CheckpointLog::Apply(uint8_t op, std::string_view body) {
  if ((op != kPut && op != kDelete) || body.size() < 6) return false;
  const uint16_t comp_len = util::GetFixed16(body.data());
  if (2u + comp_len + 4u > body.size()) return false;
  std::string component(body.substr(2, comp_len));
  const uint32_t key_len = util::GetFixed32(body.data() + 2 + comp_len);
  const size_t key_at = 2u + comp_len + 4u;
  if (key_len > body.size() - key_at) return false;
  std::string key(body.substr(key_at, key_len));
  std::string_view value = body.substr(key_at + key_len);
  auto& entries = live_[component];
  auto it = entries.find(key);
  if (it != entries.end()) live_bytes_ -= it->first.size() + it->second.size() + component.size();
  if (op == kPut) {
    live_bytes_ += key.size() + value.size() + component.size();
    entries[std::move(key)] = std::string(value);
  } else if (it != entries.end()) {
    entries.erase(it);
  }
  return true;
}

Status CheckpointLog::Replay() {
  SEEDANCE_ASSIGN_OR_RETURN(std::string data, fs_.ReadFile(path_));
  if (data.size() >= 4 && util::GetFixed32(data.data()) != kRecordMagic) {
    return ReplayLegacy(data);
  }
  size_t pos = 0;
  size_t valid_end = 0;
  bool have_expected = false;
  uint64_t expected = 0;
  bool damaged_since_good = false;  // damage after the last sound record: one lost at least
  // The records of the commit being read: applied at its end marker, together. A process
  // killed inside a commit's write leaves a prefix of it (the kernel stops a write at a page
  // when a fatal signal is pending): applying that prefix would keep part of a batch's
  // effects without the rest (window state without the redelivery ids that go with it).
  struct Pending {
    uint8_t tag;
    std::string_view payload;
  };
  std::vector<Pending> group;
  size_t group_start = 0;       // where the commit being read began
  uint64_t group_sequence = 0;  // its first record's sequence
  bool seen_marker = false;     // a file written before end markers existed: every record counts
  const auto apply_group = [&] {
    for (const Pending& p : group) {
      if (Apply(p.tag, p.payload)) {
        ++recovered_records_;
      } else {
        ++lost_records_;  // sound CRC, malformed content
      }
    }
    group.clear();
  };
  while (true) {
    ScannedRecord r;
    size_t skipped = 0;
    const ScanResult s = ScanRecord(data, &pos, &r, &skipped);
    if (s == ScanResult::kNeedMore) break;
    valid_end = pos;  // a damaged record is skipped, not cut: only a torn tail is
    if (s == ScanResult::kCorruption) {
      damaged_bytes_ += skipped;
      damaged_since_good = true;
      continue;
    }
    damaged_since_good = false;
    if (have_expected && r.sequence > expected) lost_records_ += r.sequence - expected;
    if (!have_expected || r.sequence >= expected) {
      expected = r.sequence + 1;
      have_expected = true;
    }
    if (r.tag == kCommitEnd) {
      seen_marker = true;
      apply_group();
      group_start = pos;
      continue;
    }
    if (group.empty()) group_sequence = r.sequence;
    group.push_back(Pending{r.tag, r.payload});
  }
  if (seen_marker) {
    // A commit without its end (whole records, then perhaps an incomplete one), torn by a
    // kill in its write: none of it takes effect, and it is cut so that the next commit's end
    // does not complete it. Not lost: its batch was never acknowledged, so its sources send
    // it again.
    valid_end = group_start;
    if (!group.empty()) expected = group_sequence;  // the next commit takes its sequences
    group.clear();
  } else {
    // A file without markers: every sound record counts; an incomplete one at the very end
    // is a torn write.
    apply_group();
    if (valid_end < data.size()) {
      lost_records_ += CountRecordStarts(std::string_view(data).substr(valid_end));
    }
  }
  if (valid_end < data.size()) {
    truncated_bytes_ = data.size() - valid_end;
    if (fs_.Ftruncate(fd_, static_cast<off_t>(valid_end)) != 0) return Error("truncate", path_);
  }
  if (damaged_since_good) ++lost_records_;
  next_sequence_ = have_expected ? expected : 1;
  file_bytes_ = valid_end;
  return Status::Ok();
}

Status CheckpointLog::ReplayLegacy(std::string_view data) {
  constexpr size_t kHeader = 8;
  size_t pos = 0;
  while (pos + kHeader <= data.size()) {
    const uint32_t length = util::GetFixed32(data.data() + pos);
    const uint32_t crc = util::UnmaskCrc(util::GetFixed32(data.data() + pos + 4));
    if (length < 7 || length > kMaxPayload || length > data.size() - pos - kHeader) break;
    const std::string_view body = data.substr(pos + kHeader, length);
    if (util::Crc32c(body) != crc || !Apply(static_cast<uint8_t>(body[0]), body.substr(1))) break;
    ++recovered_records_;
    pos += kHeader + length;
  }
  if (pos != data.size()) {
    // The old framing cannot resynchronise: what follows the first bad record is lost.
    truncated_bytes_ = data.size() - pos;
    lost_records_ += 1;
  }
  return Compact();  // into the current framing
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
  if (marker_bytes_ > 0) {  // a failed commit's end marker: this change joins that commit
    pending_.resize(pending_.size() - marker_bytes_);
    --next_sequence_;
    marker_bytes_ = 0;
  }
  Encode(pending_, !value.empty(), component, key, value);
}

Status CheckpointLog::Commit() {
  if (!pending_.empty()) {
    if (marker_bytes_ == 0) {  // kept across a failed write, so a retry writes the same
      const size_t before = pending_.size();
      EncodeRecord(next_sequence_++, kCommitEnd, {}, pending_);
      marker_bytes_ = pending_.size() - before;
    }
    if (const int err = fs_.WriteAll(fd_, pending_); err != 0) {
      // Cut a partial write so the next one starts on a record boundary.
      fs_.Ftruncate(fd_, static_cast<off_t>(file_bytes_));
      errno = err;
      return Error("write", path_);
    }
    file_bytes_ += pending_.size();
    bytes_written_ += pending_.size();
    pending_.clear();
    marker_bytes_ = 0;
    unsynced_ = true;
  }
  // A failed fdatasync is tried again by the next Commit, even with nothing new to write.
  if (fsync_ == Fsync::kAlways && unsynced_) {
    if (fs_.Fdatasync(fd_) != 0) return Error("fdatasync", path_);
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
  if (fs_.Fdatasync(fd_) == 0) unsynced_ = false;
}

Status CheckpointLog::Compact() {
  std::string all;
  EncodeRecord(next_sequence_++, kCommitEnd, {}, all);  // the file uses end markers
  for (const auto& [component, entries] : live_) {
    for (const auto& [key, value] : entries) Encode(all, true, component, key, value);
  }
  EncodeRecord(next_sequence_++, kCommitEnd, {}, all);
  const std::string tmp = path_ + ".tmp";
  const int fd = fs_.Open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_APPEND, 0644);
  if (fd < 0) return Error("open", tmp);
  if (const int err = fs_.WriteAll(fd, all); err != 0 || fs_.Fdatasync(fd) != 0) {
    if (err != 0) errno = err;
    Status s = Error("write", tmp);
    fs_.Close(fd);
    fs_.Unlink(tmp);
    return s;
  }
  if (fs_.Rename(tmp, path_) != 0) {
    Status s = Error("rename", tmp);
    fs_.Close(fd);
    fs_.Unlink(tmp);
    return s;
  }
  fs_.Close(fd_);
  fd_ = fd;
  file_bytes_ = all.size();
  bytes_written_ += all.size();
  unsynced_ = false;
  if (fs_.SyncDir(dir_) != 0) return Error("sync directory", dir_);
  return Status::Ok();
}

}  // namespace seedance::storage
