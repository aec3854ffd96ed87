#include "storage/queue_log.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "storage/log_format.h"
#include "storage/record_scanner.h"

namespace seedance::storage {
namespace {

Status IoError(const std::string& what) {
  return UnavailableError(what + ": " + std::strerror(errno));
}

Result<std::string> ReadWhole(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return IoError("open " + path);
  std::string data;
  char buf[1 << 16];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      return IoError("read " + path);
    }
    if (n == 0) break;
    data.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return data;
}

}  // namespace

QueueLog::QueueLog(LogOptions options) : options_(std::move(options)) {}

QueueLog::~QueueLog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (fd_ >= 0) {
      FlushLocked().IgnoreError();
      ::close(fd_);
    }
  }
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

Result<std::unique_ptr<QueueLog>> QueueLog::Open(const LogOptions& options,
                                                 RecoveryReport* report) {
  std::error_code ec;
  std::filesystem::create_directories(options.dir, ec);
  if (ec)
    return UnavailableError("cannot create queue directory " + options.dir + ": " + ec.message());
  std::unique_ptr<QueueLog> log(new QueueLog(options));
  std::string lock_path = options.dir + "/LOCK";
  log->lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (log->lock_fd_ < 0) return IoError("open " + lock_path);
  if (::flock(log->lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    return FailedPreconditionError("queue directory " + options.dir +
                                   " is in use by another seedance process");
  }
  RecoveryReport local;
  SEEDANCE_RETURN_IF_ERROR(log->Recover(report ? report : &local));
  return log;
}

Status QueueLog::Recover(RecoveryReport* report) {
  std::vector<uint64_t> firsts;
  DIR* d = ::opendir(options_.dir.c_str());
  if (d == nullptr) return IoError("opendir " + options_.dir);
  while (dirent* e = ::readdir(d)) {
    uint64_t first = 0;
    if (ParseSegmentFileName(e->d_name, &first)) firsts.push_back(first);
  }
  ::closedir(d);
  std::sort(firsts.begin(), firsts.end());
  uint64_t last_sequence = 0;
  for (size_t i = 0; i < firsts.size(); ++i) {
    std::string path = options_.dir + "/" + SegmentFileName(firsts[i]);
    SEEDANCE_ASSIGN_OR_RETURN(std::string data, ReadWhole(path));
    size_t pos = 0;
    size_t valid_end = 0;
    while (true) {
      ScannedRecord r;
      size_t skipped = 0;
      ScanResult s = ScanRecord(data, &pos, &r, &skipped);
      if (s == ScanResult::kNeedMore) break;
      if (s == ScanResult::kCorruption) {
        ++report->corrupt_records;
        report->corrupt_bytes += skipped;
        continue;
      }
      ++report->records;
      last_sequence = std::max(last_sequence, r.sequence);
      valid_end = pos;
    }
    const bool newest = i + 1 == firsts.size();
    uint64_t size = data.size();
    if (newest && valid_end < data.size()) {
      // A torn write at the end: the end of the log. Anything after the last good record in
      // the newest segment is cut (corruption counted above included).
      report->truncated_bytes += data.size() - valid_end;
      if (::truncate(path.c_str(), static_cast<off_t>(valid_end)) != 0)
        return IoError("truncate " + path);
      size = valid_end;
    }
    segments_.push_back(Segment{firsts[i], path, size});
    disk_bytes_ += size;
    ++report->segments;
  }
  next_sequence_ = std::max<uint64_t>(last_sequence + 1, firsts.empty() ? 1 : firsts.back());
  if (segments_.empty()) return OpenActive(next_sequence_);
  // Keep appending to the newest segment.
  Segment& active = segments_.back();
  fd_ = ::open(active.path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd_ < 0) return IoError("open " + active.path);
  return Status::Ok();
}

Status QueueLog::OpenActive(uint64_t first_sequence) {
  std::string path = options_.dir + "/" + SegmentFileName(first_sequence);
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) return IoError("create " + path);
  segments_.push_back(Segment{first_sequence, path, 0});
  SyncDir();
  return Status::Ok();
}

void QueueLog::SyncDir() {
  int dfd = ::open(options_.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

Result<uint64_t> QueueLog::Append(uint8_t tag, std::string_view payload) {
  if (payload.size() > kMaxPayload) return InvalidArgumentError("record larger than 64 MiB");
  std::lock_guard<std::mutex> lock(mu_);
  if (segments_.back().size + buffer_.size() >= options_.segment_bytes) {
    SEEDANCE_RETURN_IF_ERROR(RotateLocked());
  }
  uint64_t seq = next_sequence_++;
  EncodeRecord(seq, tag, payload, buffer_);
  return seq;
}

Status QueueLog::RotateLocked() {
  SEEDANCE_RETURN_IF_ERROR(FlushLocked());
  if (segments_.back().size == 0) return Status::Ok();
  ::fdatasync(fd_);  // a closed segment is durable
  ::close(fd_);
  fd_ = -1;
  return OpenActive(next_sequence_);
}

Status QueueLog::Flush() {
  std::lock_guard<std::mutex> lock(mu_);
  return FlushLocked();
}

Status QueueLog::FlushLocked() {
  if (buffer_.empty()) return Status::Ok();
  size_t off = 0;
  while (off < buffer_.size()) {
    ssize_t n = ::write(fd_, buffer_.data() + off, buffer_.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Status s = IoError("write " + segments_.back().path);
      // Keep what was not written; cut a partial record so the file stays parseable.
      if (off > 0 && ::ftruncate(fd_, static_cast<off_t>(segments_.back().size)) == 0) off = 0;
      buffer_.erase(0, off);
      return s;
    }
    off += static_cast<size_t>(n);
  }
  segments_.back().size += buffer_.size();
  disk_bytes_ += buffer_.size();
  buffer_.clear();
  return Status::Ok();
}

Status QueueLog::Sync() {
  std::lock_guard<std::mutex> lock(mu_);
  SEEDANCE_RETURN_IF_ERROR(FlushLocked());
  if (::fdatasync(fd_) != 0) return IoError("fdatasync " + segments_.back().path);
  return Status::Ok();
}

void QueueLog::DeleteBefore(uint64_t sequence) {
  std::lock_guard<std::mutex> lock(mu_);
  // Segment i holds [first_i, first_{i+1}); it can go when first_{i+1} <= sequence.
  while (segments_.size() > 1 && segments_[1].first_sequence <= sequence) {
    ::unlink(segments_.front().path.c_str());
    disk_bytes_ -= segments_.front().size;
    segments_.erase(segments_.begin());
  }
}

Result<uint64_t> QueueLog::DropOldestSegment() {
  std::lock_guard<std::mutex> lock(mu_);
  if (segments_.size() < 2) return FailedPreconditionError("only the active segment is left");
  uint64_t records = segments_[1].first_sequence - segments_[0].first_sequence;
  ::unlink(segments_.front().path.c_str());
  disk_bytes_ -= segments_.front().size;
  segments_.erase(segments_.begin());
  return records;
}

uint64_t QueueLog::next_sequence() const {
  std::lock_guard<std::mutex> lock(mu_);
  return next_sequence_;
}

uint64_t QueueLog::first_sequence() const {
  std::lock_guard<std::mutex> lock(mu_);
  return segments_.empty() ? next_sequence_ : segments_.front().first_sequence;
}

uint64_t QueueLog::disk_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return disk_bytes_ + buffer_.size();
}

std::vector<SegmentInfo> QueueLog::Segments() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<SegmentInfo> out;
  for (size_t i = 0; i < segments_.size(); ++i) {
    out.push_back(SegmentInfo{segments_[i].first_sequence, segments_[i].path, segments_[i].size,
                              i + 1 == segments_.size()});
  }
  return out;
}

QueueLog::SegmentPosition QueueLog::Locate(uint64_t first_sequence) const {
  std::lock_guard<std::mutex> lock(mu_);
  SegmentPosition p;
  if (segments_.empty()) return p;
  p.any = true;
  p.oldest_first = segments_.front().first_sequence;
  for (size_t i = 0; i < segments_.size(); ++i) {
    if (segments_[i].first_sequence != first_sequence) continue;
    p.found = true;
    p.size = segments_[i].size;
    p.active = i + 1 == segments_.size();
    if (i + 1 < segments_.size()) {
      p.has_next = true;
      p.next_first = segments_[i + 1].first_sequence;
    }
  }
  return p;
}

}  // namespace seedance::storage
