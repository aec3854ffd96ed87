#include "core/durable_queue.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <tuple>

#include "storage/event_codec.h"
#include "util/log.h"

namespace seedance {
namespace {

std::string SafeFileName(const std::string& name) {
  std::string out;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.';
    out.push_back(ok ? c : '_');
  }
  return out;
}

util::LogLimiter& Limiter() {
  static util::LogLimiter limiter(std::chrono::seconds(10));
  return limiter;
}

}  // namespace

// ---- SinkCursor ----

SinkCursor::SinkCursor(DurableQueue& queue, std::string name, std::vector<Output> inputs,
                       uint64_t start)
    : queue_(queue),
      name_(std::move(name)),
      wanted_(kOutputCount, false),
      reader_(*queue.log_, start),
      read_next_(start),
      committed_(start),
      saved_(start),
      path_(queue.CursorPath(name_)),
      tmp_path_(path_ + ".tmp") {
  for (Output o : inputs) wanted_[static_cast<int>(o)] = true;
  spare_.reserve(kSpareEvents);
}

SinkCursor::~SinkCursor() {
  std::lock_guard<std::mutex> lock(queue_.cursors_mu_);
  auto& v = queue_.cursors_;
  v.erase(std::remove(v.begin(), v.end(), this), v.end());
}

void SinkCursor::Decode(uint8_t tag, std::string_view payload, std::vector<Event>* out,
                        size_t* n) {
  if (tag >= wanted_.size() || !wanted_[tag]) return;
  // Decode into the element already there (its strings keep their storage), a spare one, or
  // a new one.
  if (*n == out->size()) {
    if (spare_.empty()) {
      out->emplace_back();
    } else {
      out->push_back(std::move(spare_.back()));
      spare_.pop_back();
    }
  }
  Status s = storage::DecodeEvent(payload, &(*out)[*n]);
  if (!s.ok()) {
    queue_.corrupt_.Add();
    return;
  }
  ++*n;
}

void SinkCursor::Truncate(std::vector<Event>* out, size_t n) {
  while (out->size() > n && spare_.size() < kSpareEvents) {
    spare_.push_back(std::move(out->back()));
    out->pop_back();
  }
  out->resize(n);
}

void SinkCursor::Return(uint64_t first, uint64_t last) { returned_.emplace_back(first, last); }

void SinkCursor::ReadAgain(uint64_t first, uint64_t last, std::vector<Event>* out, size_t* n) {
  // The range is not finished, so its segments are still there (unless drop_oldest deleted
  // them: then what is left of it).
  storage::QueueReader again(queue_.log(), first);
  uint64_t seq = 0;
  uint8_t tag = 0;
  std::string_view payload;
  while (again.Next(&seq, &tag, &payload) && seq <= last) Decode(tag, payload, out, n);
}

bool SinkCursor::Read(size_t max, std::vector<Event>* out, uint64_t* first, uint64_t* last) {
  size_t n = 0;
  if (!returned_.empty()) {
    std::tie(*first, *last) = returned_.front();
    returned_.pop_front();
    ReadAgain(*first, *last, out, &n);
    Truncate(out, n);
    return true;
  }
  *first = read_next_;
  bool any = false;
  uint64_t skipped_before = reader_.skipped_records();
  uint64_t seq = 0;
  uint8_t tag = 0;
  std::string_view payload;
  size_t scanned = 0;
  while (n < max && scanned < 4 * max + 64 && reader_.Next(&seq, &tag, &payload)) {
    ++scanned;
    any = true;
    *last = seq;
    read_next_ = seq + 1;
    Decode(tag, payload, out, &n);
  }
  Truncate(out, n);
  if (uint64_t skipped = reader_.skipped_records() - skipped_before; skipped > 0) {
    queue_.corrupt_.Add(skipped);
    uint64_t suppressed = 0;
    if (Limiter().Allow("corrupt/" + name_, &suppressed)) {
      SEEDANCE_LOG_WARN(name_, "durable queue: skipped {} corrupt record(s)", skipped);
    }
  }
  return any;
}

void SinkCursor::Done(uint64_t first, uint64_t last) {
  finished_.emplace_back(first, last);
  std::sort(finished_.begin(), finished_.end());
  uint64_t c = committed_.load();
  while (!finished_.empty() && finished_.front().first <= c) {
    c = std::max(c, finished_.front().second + 1);
    finished_.erase(finished_.begin());
  }
  committed_.store(c);
  auto now = std::chrono::steady_clock::now();
  if (now - last_save_ >= std::chrono::milliseconds(100)) {
    Save();
    last_save_ = now;
  }
  queue_.CollectGarbage();
}

uint64_t SinkCursor::Backlog() const {
  uint64_t next = queue_.log_->next_sequence();
  uint64_t backlog = next > read_next_ ? next - read_next_ : 0;
  for (const auto& [first, last] : returned_) backlog += last - first + 1;
  return backlog;
}

void SinkCursor::Save() {
  uint64_t c = committed_.load();
  if (c == saved_) return;
  // Written to a temporary file and renamed over the old one; plain POSIX calls on paths made
  // once, so the saves (up to ten a second) allocate nothing.
  char text[32];
  const auto end = fmt::format_to_n(text, sizeof text - 1, "{}\n", c).out;
  const int fd = ::open(tmp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  const auto size = static_cast<size_t>(end - text);
  const bool written = ::write(fd, text, size) == static_cast<ssize_t>(size);
  ::close(fd);
  if (written && std::rename(tmp_path_.c_str(), path_.c_str()) == 0) saved_ = c;
}

// ---- DurableQueue ----

DurableQueue::DurableQueue(QueueConfig config, std::unique_ptr<storage::QueueLog> log,
                           observe::MetricsRegistry& m)
    : config_(std::move(config)),
      log_(std::move(log)),
      disk_gauge_(
          m.GetGauge("seedance_queue_disk_bytes", "Bytes of the durable queue on disk.", {})),
      appended_(m.GetCounter("seedance_queue_appended_total",
                             "Records appended to the durable queue.", {})),
      dropped_(m.GetCounter("seedance_queue_dropped_total",
                            "Records deleted unread at the disk limit (drop_oldest).", {})),
      blocked_(m.GetCounter("seedance_queue_blocked_total",
                            "Times appends waited for the sinks at the disk limit.", {})),
      corrupt_(m.GetCounter("seedance_queue_corrupt_records_total",
                            "Corrupt records found (at recovery or while reading) and skipped.",
                            {})),
      fsync_latency_(m.GetHistogram("seedance_queue_fsync_seconds", "Time taken by fsync.", {})) {}

DurableQueue::~DurableQueue() { SaveCursors(); }

Result<std::unique_ptr<DurableQueue>> DurableQueue::Open(const QueueConfig& config,
                                                         observe::MetricsRegistry& metrics) {
  QueueConfig c = config;
  if (c.segment_bytes > c.max_disk / 4) {
    c.segment_bytes = std::max<uint64_t>(64 * 1024, c.max_disk / 4);
  }
  std::error_code ec;
  std::filesystem::create_directories(c.data_dir + "/cursors", ec);
  if (ec) {
    return UnavailableError(fmt::format("queue.data_dir {}: {}", c.data_dir, ec.message()));
  }
  storage::RecoveryReport report;
  auto log =
      storage::QueueLog::Open(storage::LogOptions{c.data_dir + "/queue", c.segment_bytes}, &report);
  if (!log) return log.error().WithContext("durable queue");
  std::unique_ptr<DurableQueue> q(new DurableQueue(c, std::move(log).value(), metrics));
  q->corrupt_.Add(report.corrupt_records);
  q->disk_gauge_.Set(static_cast<int64_t>(q->log_->disk_bytes()));
  if (report.corrupt_records > 0 || report.truncated_bytes > 0) {
    SEEDANCE_LOG_WARN("queue",
                      "recovery: {} corrupt record(s) skipped ({} bytes), {} bytes of torn tail "
                      "truncated",
                      report.corrupt_records, report.corrupt_bytes, report.truncated_bytes);
  }
  SEEDANCE_LOG_INFO("queue", "durable queue in {}: {} record(s) in {} segment(s) recovered",
                    c.data_dir, report.records, report.segments);
  return q;
}

std::string DurableQueue::CursorPath(const std::string& name) const {
  return config_.data_dir + "/cursors/" + SafeFileName(name);
}

std::unique_ptr<SinkCursor> DurableQueue::OpenCursor(const std::string& name,
                                                     std::vector<Output> inputs) {
  uint64_t start = log_->first_sequence();
  std::ifstream in(CursorPath(name));
  uint64_t saved = 0;
  if (in >> saved) start = std::max(start, saved);
  std::unique_ptr<SinkCursor> cursor(new SinkCursor(*this, name, std::move(inputs), start));
  std::lock_guard<std::mutex> lock(cursors_mu_);
  cursors_.push_back(cursor.get());
  return cursor;
}

void DurableQueue::SaveCursors() {
  std::lock_guard<std::mutex> lock(cursors_mu_);
  for (SinkCursor* c : cursors_) c->Save();
}

Status DurableQueue::MakeRoom(std::chrono::steady_clock::time_point deadline) {
  if (config_.drop_oldest) {
    while (log_->disk_bytes() >= config_.max_disk) {
      auto dropped = log_->DropOldestSegment();
      if (!dropped) break;  // only the active segment is left
      dropped_.Add(*dropped);
      uint64_t suppressed = 0;
      if (Limiter().Allow("drop_oldest", &suppressed)) {
        SEEDANCE_LOG_WARN("queue", "disk limit of {} bytes reached: dropped {} oldest record(s)",
                          config_.max_disk, *dropped);
      }
    }
    return Status::Ok();
  }
  // Make what is appended visible, so the sinks can drain it, then wait for them.
  SEEDANCE_RETURN_IF_ERROR(Commit());
  blocked_.Add();
  uint64_t suppressed = 0;
  if (Limiter().Allow("blocked", &suppressed)) {
    SEEDANCE_LOG_WARN("queue",
                      "disk limit of {} bytes reached: waiting for the sinks; sources are not "
                      "acknowledged meanwhile",
                      config_.max_disk);
  }
  std::unique_lock<std::mutex> lock(space_mu_);
  auto give_up = [&] {
    auto now = std::chrono::steady_clock::now();
    return now >= deadline || now.time_since_epoch().count() >= shutdown_deadline_ns_.load();
  };
  while (log_->disk_bytes() >= config_.max_disk && !give_up()) {
    space_cv_.wait_for(lock, std::chrono::milliseconds(100));
  }
  return Status::Ok();
}

Status DurableQueue::Append(Output output, const Event& event,
                            std::chrono::steady_clock::time_point deadline) {
  if (log_->disk_bytes() >= config_.max_disk) SEEDANCE_RETURN_IF_ERROR(MakeRoom(deadline));
  scratch_.clear();
  storage::EncodeEvent(event, scratch_);
  auto seq = log_->Append(static_cast<uint8_t>(output), scratch_);
  if (!seq) return seq.error();
  appended_.Add();
  return Status::Ok();
}

Status DurableQueue::AppendNoWait(Output output, const Event& event) {
  std::string bytes;
  storage::EncodeEvent(event, bytes);
  auto seq = log_->Append(static_cast<uint8_t>(output), bytes);
  if (!seq) return seq.error();
  appended_.Add();
  SEEDANCE_RETURN_IF_ERROR(log_->Flush());
  if (on_commit_) on_commit_();
  return Status::Ok();
}

Status DurableQueue::Commit() {
  if (config_.fsync == QueueConfig::Fsync::kAlways) {
    auto t0 = std::chrono::steady_clock::now();
    SEEDANCE_RETURN_IF_ERROR(log_->Sync());
    fsync_latency_.Observe(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  } else {
    SEEDANCE_RETURN_IF_ERROR(log_->Flush());
    dirty_ = true;
  }
  disk_gauge_.Set(static_cast<int64_t>(log_->disk_bytes()));
  if (on_commit_) on_commit_();
  return Status::Ok();
}

void DurableQueue::Tick() {
  if (config_.fsync != QueueConfig::Fsync::kInterval || !dirty_) return;
  auto now = std::chrono::steady_clock::now();
  if (now - last_sync_ < config_.fsync_interval) return;
  Status s = log_->Sync();
  fsync_latency_.Observe(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - now).count());
  last_sync_ = now;
  if (s.ok()) dirty_ = false;
}

void DurableQueue::CollectGarbage() {
  uint64_t min = UINT64_MAX;
  {
    std::lock_guard<std::mutex> lock(cursors_mu_);
    for (SinkCursor* c : cursors_) min = std::min(min, c->committed());
  }
  if (min == UINT64_MAX) return;
  log_->DeleteBefore(min);
  disk_gauge_.Set(static_cast<int64_t>(log_->disk_bytes()));
  space_cv_.notify_all();
}

}  // namespace seedance
