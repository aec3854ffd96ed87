#include "storage/queue_log.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "storage/log_format.h"
#include "storage/record_scanner.h"
#include "util/scratch_buffer.h"

namespace seedance::storage {
namespace {
// The write buffer holds one commit's records; storage beyond this (left by a large event) is
// given back after the flush.
constexpr size_t kKeepBufferBytes = 1 << 20;
}  // namespace

const char* LossReasonName(LossReason reason) {
  switch (reason) {
    case LossReason::kCorrupt:
      return "corrupt";
    case LossReason::kMissingSegment:
      return "missing_segment";
    case LossReason::kTornTail:
      return "torn_tail";
    case LossReason::kLostTail:
      return "lost_tail";
    case LossReason::kDropped:
      return "dropped";
  }
  return "unknown";
}

QueueLog::QueueLog(LogOptions options) : options_(std::move(options)), fs_(*options_.fs) {}

QueueLog::~QueueLog() {
  {
    std::lock_guard<std::mutex> fd_lock(fd_mu_);
    std::lock_guard<std::mutex> lock(mu_);
    if (fd_ >= 0) {
      FlushLocked().IgnoreError();
      fs_.Close(fd_);
    }
  }
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

Status QueueLog::Error(const std::string& what, const std::string& path) const {
  const int err = errno;
  std::string message = what + " " + path + ": " + std::strerror(err);
  return IsNoSpace(err) ? ResourceExhaustedError(std::move(message))
                        : UnavailableError(std::move(message));
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
  if (log->lock_fd_ < 0) return log->Error("open", lock_path);
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
  if (d == nullptr) return Error("opendir", options_.dir);
  while (dirent* e = ::readdir(d)) {
    uint64_t first = 0;
    if (ParseSegmentFileName(e->d_name, &first)) firsts.push_back(first);
  }
  ::closedir(d);
  std::sort(firsts.begin(), firsts.end());
  // Sequences are consecutive within the log; the writer jumps only at a segment boundary
  // (SkipTo, or after a torn tail). `expected` is the next sequence the log should hold.
  uint64_t expected = firsts.empty() ? 1 : firsts.front();
  bool damaged = false;  // bytes failed a CRC since the last good record
  auto gap = [&](uint64_t upto, LossReason reason) {
    if (upto > expected) report->gaps.push_back(SequenceGap{expected, upto - 1, reason});
  };
  for (size_t i = 0; i < firsts.size(); ++i) {
    gap(firsts[i], damaged ? LossReason::kCorrupt : LossReason::kMissingSegment);
    expected = std::max(expected, firsts[i]);
    damaged = false;
    const std::string path = options_.dir + "/" + SegmentFileName(firsts[i]);
    SEEDANCE_ASSIGN_OR_RETURN(std::string data, fs_.ReadFile(path));
    size_t pos = 0;
    size_t valid_end = 0;
    while (true) {
      ScannedRecord r;
      size_t skipped = 0;
      ScanResult s = ScanRecord(data, &pos, &r, &skipped);
      if (s == ScanResult::kNeedMore) break;
      if (s == ScanResult::kCorruption) {
        ++report->damaged_regions;
        report->damaged_bytes += skipped;
        damaged = true;
        continue;
      }
      ++report->records;
      valid_end = pos;
      if (r.sequence < expected) continue;  // out of order: not a sequence this log still owes
      gap(r.sequence, LossReason::kCorrupt);
      expected = r.sequence + 1;
      damaged = false;
    }
    const bool newest = i + 1 == firsts.size();
    uint64_t size = data.size();
    if (!newest && valid_end < data.size()) {  // a closed segment cut short: damage, not a tear
      ++report->damaged_regions;
      report->damaged_bytes += data.size() - valid_end;
      damaged = true;
    }
    if (newest && valid_end < data.size()) {
      // A torn write at the end: the end of the log. Everything after the last good record
      // of the newest segment is cut, and counted by the records that started there.
      const std::string_view tail(data.data() + valid_end, data.size() - valid_end);
      const uint64_t torn = CountRecordStarts(tail);
      report->truncated_bytes += tail.size();
      // Its damaged regions are part of the tail now, not of what stays.
      report->gaps.push_back(SequenceGap{expected, expected + torn - 1, LossReason::kTornTail});
      expected += torn;
      const int fd = fs_.Open(path, O_WRONLY, 0);
      if (fd < 0) return Error("open", path);
      const int rc = fs_.Ftruncate(fd, static_cast<off_t>(valid_end));
      if (rc == 0) fs_.Fdatasync(fd);
      fs_.Close(fd);
      if (rc != 0) return Error("truncate", path);
      size = valid_end;
    }
    segments_.push_back(Segment{firsts[i], path, size});
    disk_bytes_ += size;
    ++report->segments;
  }
  next_sequence_ = expected;
  buffer_first_ = next_sequence_;
  flushed_next_ = next_sequence_;
  if (segments_.empty()) return OpenActive(next_sequence_);
  // Keep appending to the newest segment. Sequences lost in a torn tail are not numbered
  // again (a sink may have delivered them before a power cut): the jump starts a new segment.
  Segment& active = segments_.back();
  fd_ = fs_.Open(active.path, O_WRONLY | O_APPEND, 0);
  if (fd_ < 0) return Error("open", active.path);
  if (report->truncated_bytes > 0) {
    if (active.size == 0) return RestartActiveLocked(next_sequence_);
    fs_.Close(fd_);
    fd_ = -1;
    return OpenActive(next_sequence_);
  }
  return Status::Ok();
}

Status QueueLog::OpenActive(uint64_t first_sequence) {
  std::string path = options_.dir + "/" + SegmentFileName(first_sequence);
  fd_ = fs_.Open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd_ < 0) return Error("create", path);
  segments_.push_back(Segment{first_sequence, path, 0});
  if (fs_.SyncDir(options_.dir) != 0) return Error("sync directory", options_.dir);
  return Status::Ok();
}

Result<uint64_t> QueueLog::Append(uint8_t tag, std::string_view payload) {
  if (payload.size() > kMaxPayload) return InvalidArgumentError("record larger than 64 MiB");
  return AppendEncoded(tag, [payload](std::string& out) { out.append(payload); });
}

Result<uint64_t> QueueLog::AppendEncoded(uint8_t tag,
                                         const std::function<void(std::string&)>& encode) {
  std::unique_lock<std::mutex> lock(mu_);
  auto must_rotate = [this] {
    return fd_ < 0 || segments_.back().size + buffer_.size() >= options_.segment_bytes;
  };
  if (must_rotate()) {  // rare: closing the descriptor waits for a Sync() in progress
    lock.unlock();
    std::lock_guard<std::mutex> fd_lock(fd_mu_);
    lock.lock();
    if (must_rotate()) SEEDANCE_RETURN_IF_ERROR(RotateLocked());
  }
  const size_t start = BeginRecord(buffer_);
  encode(buffer_);
  if (buffer_.size() - start - kHeaderSize > kMaxPayload) {
    buffer_.resize(start);
    return InvalidArgumentError("record larger than 64 MiB");
  }
  uint64_t seq = next_sequence_++;
  if (start == 0) buffer_first_ = seq;
  FinishRecord(seq, tag, start, buffer_);
  return seq;
}

Status QueueLog::RotateLocked() {
  if (fd_ >= 0) {
    SEEDANCE_RETURN_IF_ERROR(FlushLocked());
    if (segments_.back().size == 0) return Status::Ok();
    if (fs_.Fdatasync(fd_) != 0) return Error("fdatasync", segments_.back().path);
    fs_.Close(fd_);
    fd_ = -1;
  }
  // A failed creation leaves fd_ at -1: the next Append tries again.
  return OpenActive(next_sequence_);
}

Status QueueLog::RestartActiveLocked(uint64_t first_sequence) {
  Segment& active = segments_.back();
  if (fd_ < 0) return FailedPreconditionError("no active segment");
  if (fs_.Ftruncate(fd_, 0) != 0) return Error("truncate", active.path);
  disk_bytes_ -= active.size;
  active.size = 0;
  if (first_sequence != active.first_sequence) {
    const std::string path = options_.dir + "/" + SegmentFileName(first_sequence);
    if (fs_.Rename(active.path, path) != 0) return Error("rename", active.path);
    active.path = path;
    active.first_sequence = first_sequence;
  }
  fs_.SyncDir(options_.dir);
  return Status::Ok();
}

Status QueueLog::Flush() {
  std::lock_guard<std::mutex> lock(mu_);
  return FlushLocked();
}

Status QueueLog::FlushLocked() {
  if (buffer_.empty()) return Status::Ok();
  if (fd_ < 0) return UnavailableError("no active segment in " + options_.dir);
  size_t off = 0;
  while (off < buffer_.size()) {
    ssize_t n = fs_.Write(fd_, buffer_.data() + off, buffer_.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      Status s = Error("write", segments_.back().path);
      // Cut a partial record so the file stays parseable, and keep the whole buffer for the
      // next try; when the cut fails, keep only what was not written (the file then ends
      // inside a record that the next write completes).
      if (off > 0 && fs_.Ftruncate(fd_, static_cast<off_t>(segments_.back().size)) != 0) {
        segments_.back().size += off;
        disk_bytes_ += off;
        buffer_.erase(0, off);
        buffer_first_ = 0;  // the buffer starts inside a record now
      }
      return s;
    }
    off += static_cast<size_t>(n);
  }
  segments_.back().size += buffer_.size();
  disk_bytes_ += buffer_.size();
  buffer_.clear();
  util::ReleaseIfLarger(buffer_, kKeepBufferBytes);
  buffer_first_ = next_sequence_;
  flushed_next_ = next_sequence_;
  return Status::Ok();
}

Status QueueLog::Sync() { return SyncActive(/*flush=*/true); }

Status QueueLog::SyncWritten() { return SyncActive(/*flush=*/false); }

Status QueueLog::SyncActive(bool flush) {
  std::lock_guard<std::mutex> fd_lock(fd_mu_);  // fd_ stays open until this returns
  int fd = -1;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (flush) SEEDANCE_RETURN_IF_ERROR(FlushLocked());
    if (fd_ < 0) return Status::Ok();
    fd = fd_;
    sync_path_ = segments_.back().path;  // into the storage it has: no allocation per sync
  }
  if (fs_.Fdatasync(fd) != 0) return Error("fdatasync", sync_path_);
  return Status::Ok();
}

Status QueueLog::SkipTo(uint64_t sequence) {
  std::lock_guard<std::mutex> fd_lock(fd_mu_);
  std::lock_guard<std::mutex> lock(mu_);
  if (sequence <= next_sequence_) return Status::Ok();
  SEEDANCE_RETURN_IF_ERROR(FlushLocked());
  next_sequence_ = sequence;
  buffer_first_ = sequence;
  flushed_next_ = sequence;
  if (fd_ >= 0 && segments_.back().size == 0) return RestartActiveLocked(sequence);
  return RotateLocked();
}

void QueueLog::DeleteBefore(uint64_t sequence, bool reclaim_active) {
  std::lock_guard<std::mutex> lock(mu_);
  // Segment i holds [first_i, first_{i+1}); it can go when first_{i+1} <= sequence.
  while (segments_.size() > 1 && segments_[1].first_sequence <= sequence) {
    // Oldest first, and only what is gone from disk leaves the list: a failed unlink is tried
    // again next time, and no gap opens between the segments that stay.
    if (fs_.Unlink(segments_.front().path) != 0 && errno != ENOENT) break;
    disk_bytes_ -= segments_.front().size;
    segments_.erase(segments_.begin());
  }
  // Buffered records (a full disk kept them from being written) go to the emptied segment.
  if (reclaim_active && segments_.size() == 1 && segments_.back().size > 0 && buffer_first_ != 0 &&
      sequence >= buffer_first_) {
    RestartActiveLocked(buffer_first_).IgnoreError();
  }
}

Result<std::pair<uint64_t, uint64_t>> QueueLog::DropOldestSegment() {
  std::lock_guard<std::mutex> lock(mu_);
  if (segments_.empty()) return FailedPreconditionError("no segment");
  if (segments_.size() >= 2) {
    std::pair<uint64_t, uint64_t> range{segments_[0].first_sequence,
                                        segments_[1].first_sequence - 1};
    if (fs_.Unlink(segments_.front().path) != 0 && errno != ENOENT) {
      return Error("unlink", segments_.front().path);
    }
    disk_bytes_ -= segments_.front().size;
    segments_.erase(segments_.begin());
    return range;
  }
  // Only the active segment: drop what it holds on disk; buffered records stay and are
  // written to it next, so it restarts at the first of them.
  const Segment& active = segments_.back();
  if (active.size == 0 || buffer_first_ == 0) {
    return FailedPreconditionError("nothing on disk to drop");
  }
  std::pair<uint64_t, uint64_t> range{active.first_sequence, buffer_first_ - 1};
  SEEDANCE_RETURN_IF_ERROR(RestartActiveLocked(buffer_first_));
  return range;
}

void QueueLog::SetSegmentBytes(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  options_.segment_bytes = bytes;
}

uint64_t QueueLog::segment_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return options_.segment_bytes;
}

uint64_t QueueLog::next_sequence() const {
  std::lock_guard<std::mutex> lock(mu_);
  return next_sequence_;
}

uint64_t QueueLog::flushed_next() const {
  std::lock_guard<std::mutex> lock(mu_);
  return flushed_next_;
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
