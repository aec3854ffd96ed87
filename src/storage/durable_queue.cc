#include "storage/durable_queue.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <tuple>

#include "storage/cursor_file.h"
#include "storage/event_codec.h"
#include "util/log.h"
#include "util/loop_signal.h"

namespace seedance::storage {
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

using storage::CursorFile;
using storage::ReadCursorFile;

util::LogLimiter& Limiter() {
  static util::LogLimiter limiter(std::chrono::seconds(10));
  return limiter;
}

}  // namespace

// ---- DurableQueue ----

DurableQueue::DurableQueue(QueueConfig config, std::unique_ptr<storage::QueueLog> log,
                           observe::MetricsRegistry& m)
    : config_(std::move(config)),
      log_(std::move(log)),
      metrics_(m),
      disk_gauge_(
          m.GetGauge("seedance_queue_disk_bytes", "Bytes of the durable queue on disk.", {})),
      appended_(m.GetCounter("seedance_queue_appended_total",
                             "Records appended to the durable queue.", {})),
      dropped_(m.GetCounter("seedance_queue_dropped_total",
                            "Records deleted at the disk limit (drop_oldest) before every "
                            "sink had read them, each counted once.",
                            {})),
      blocked_(m.GetCounter("seedance_queue_blocked_total",
                            "Times appends waited for the sinks at the disk limit.", {})),
      corrupt_(m.GetCounter("seedance_queue_corrupt_records_total",
                            "Records lost to damaged bytes, each counted once.", {})),
      damaged_bytes_(m.GetCounter("seedance_queue_damaged_bytes_total",
                                  "Bytes of the durable queue that failed their CRC and were "
                                  "skipped.",
                                  {})),
      disk_full_(m.GetCounter("seedance_queue_disk_full_total",
                              "Times a write found the file system full (ENOSPC, EDQUOT).", {})),
      fsync_latency_(m.GetHistogram("seedance_queue_fsync_seconds", "Time taken by fsync.", {})),
      fsync_failures_(m.GetCounter("seedance_queue_fsync_failures_total",
                                   "Interval fsyncs of the durable queue that failed (each is "
                                   "tried again after the next interval).",
                                   {})) {
  for (auto reason : {storage::LossReason::kCorrupt, storage::LossReason::kMissingSegment,
                      storage::LossReason::kTornTail, storage::LossReason::kLostTail}) {
    Lost(reason);  // every reason shows from the start, at 0
  }
  for (const char* reason : {"damaged", "ahead"}) {
    m.GetCounter("seedance_queue_cursor_resets_total",
                 "Saved sink positions that could not be used as they were, by reason.",
                 {{"reason", reason}});
  }
  if (config_.fsync.mode == QueueConfig::Fsync::kInterval) {
    background_sync_ = std::make_unique<storage::BackgroundSync>(
        config_.fsync.interval, [this] { return BackgroundSyncOnce(); });
  }
}

DurableQueue::~DurableQueue() { SaveCursors(); }

bool DurableQueue::BackgroundSyncOnce() {
  const auto t0 = std::chrono::steady_clock::now();
  const Status s = log_->SyncWritten();
  fsync_latency_.Observe(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  if (!s.ok()) {
    fsync_failures_.Add();
    // Once per episode: a failing disk fails every interval.
    if (!fsync_failing_) {
      SEEDANCE_LOG_ERROR(
          "queue",
          "{}; what was written since the last fsync is not yet safe "
          "from a power cut; tried again every {} ms",
          s.message(),
          std::chrono::duration_cast<std::chrono::milliseconds>(config_.fsync.interval).count());
    }
    fsync_failing_ = true;
    return false;
  }
  if (fsync_failing_) SEEDANCE_LOG_INFO("queue", "fsync succeeds again");
  fsync_failing_ = false;
  return true;
}

observe::Counter& DurableQueue::Lost(storage::LossReason reason) {
  return metrics_.GetCounter("seedance_queue_lost_records_total",
                             "Records the durable queue should hold and does not, by reason; "
                             "each counted once.",
                             {{"reason", storage::LossReasonName(reason)}});
}

Result<std::unique_ptr<DurableQueue>> DurableQueue::Open(const QueueConfig& config,
                                                         observe::MetricsRegistry& metrics,
                                                         storage::FileSystem& fs) {
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
  auto log = storage::QueueLog::Open(
      storage::LogOptions{c.data_dir + "/queue", c.segment_bytes, &fs}, &report);
  if (!log) return log.error().WithContext("durable queue");
  std::unique_ptr<DurableQueue> q(new DurableQueue(c, std::move(log).value(), metrics));
  q->log_end_at_open_ = q->log_->next_sequence();
  q->damaged_bytes_.Add(report.damaged_bytes);
  for (const auto& gap : report.gaps) q->gaps_[gap.first] = KnownGap{gap};

  // Sequence numbers never go backwards: a saved position beyond the log's end proves that
  // the sequences below it were used (the log lost its tail, or its files were removed).
  uint64_t highest = 0;          // any saved position
  uint64_t highest_checked = 0;  // positions whose checksum held
  DIR* d = ::opendir((c.data_dir + "/cursors").c_str());
  while (d != nullptr) {
    dirent* e = ::readdir(d);
    if (e == nullptr) break;
    const std::string name = e->d_name;
    if (name == "." || name == ".." || name.ends_with(".tmp")) continue;
    uint64_t position = 0;
    switch (ReadCursorFile(fs, c.data_dir + "/cursors/" + name, &position)) {
      case CursorFile::kOk:
        highest_checked = std::max(highest_checked, position);
        [[fallthrough]];
      case CursorFile::kText:
        highest = std::max(highest, position);
        break;
      default:
        break;
    }
  }
  if (d != nullptr) ::closedir(d);
  // The log's end as last saved: records below it were written, so any beyond the end found
  // now were lost (a power cut before they were synced, a file cut or removed).
  q->head_writer_ = std::make_unique<storage::CursorWriter>(fs, c.data_dir + "/queue/HEAD");
  uint64_t head = 0;
  if (ReadCursorFile(fs, q->head_writer_->path(), &head) == CursorFile::kOk) {
    highest_checked = std::max(highest_checked, head);
    highest = std::max(highest, head);
    q->head_saved_ = head;
  }
  if (highest_checked > q->log_end_at_open_) {
    // Records up to there existed (a sink delivered them, or HEAD saw them written); sinks
    // behind never will.
    q->gaps_[q->log_end_at_open_] = KnownGap{storage::SequenceGap{
        q->log_end_at_open_, highest_checked - 1, storage::LossReason::kLostTail}};
  }
  if (highest > highest_checked && highest > q->log_end_at_open_) {
    // Moved on by a position without a checksum: skipped, not lost.
    const uint64_t from = std::max(q->log_end_at_open_, highest_checked);
    q->gaps_[from] = KnownGap{
        storage::SequenceGap{from, highest - 1, storage::LossReason::kLostTail}, false, false};
  }
  if (highest > q->log_end_at_open_) {
    SEEDANCE_RETURN_IF_ERROR(q->log_->SkipTo(highest).WithContext("durable queue"));
  }

  q->disk_gauge_.Set(static_cast<int64_t>(q->log_->disk_bytes()));
  if (report.damaged_regions > 0 || report.truncated_bytes > 0) {
    SEEDANCE_LOG_WARN("queue",
                      "recovery: {} damaged region(s) skipped ({} bytes), {} bytes of torn tail "
                      "truncated",
                      report.damaged_regions, report.damaged_bytes, report.truncated_bytes);
  }
  SEEDANCE_LOG_INFO("queue", "durable queue in {}: {} record(s) in {} segment(s) recovered",
                    c.data_dir, report.records, report.segments);
  return q;
}

bool DurableQueue::SavedThisRun(const std::string& name) {
  std::lock_guard<std::mutex> lock(cursors_mu_);
  return opened_.count(name) > 0;
}

std::string DurableQueue::CursorPath(const std::string& name) const {
  return config_.data_dir + "/cursors/" + SafeFileName(name);
}

bool DurableQueue::ForgetCursor(const QueueConfig& config, const std::string& name,
                                storage::FileSystem& fs) {
  return fs.Unlink(config.data_dir + "/cursors/" + SafeFileName(name)) == 0;
}

std::unique_ptr<SinkCursor> DurableQueue::OpenCursor(const std::string& name,
                                                     std::vector<Output> inputs,
                                                     NewCursorAt new_at) {
  const uint64_t oldest = log_->first_sequence();
  uint64_t start = oldest;
  uint64_t saved = 0;
  uint64_t delivered_below = 0;  // this sink delivered every record below (as far as known)
  std::string why;
  switch (ReadCursorFile(log_->fs(), CursorPath(name), &saved, nullptr, &why)) {
    case CursorFile::kMissing:
      if (new_at == NewCursorAt::kEnd) start = log_->next_sequence();
      break;
    case CursorFile::kDamaged:
      metrics_.GetCounter("seedance_queue_cursor_resets_total", "", {{"reason", "damaged"}}).Add();
      SEEDANCE_LOG_ERROR(name,
                         "durable queue: saved position {} is damaged; re-sending from the "
                         "oldest retained record {} (duplicates, never loss)",
                         CursorPath(name), oldest);
      break;
    case CursorFile::kUnreadable:
      // Not known to be damaged, but not known at all: re-sending what is retained costs
      // duplicates; guessing could lose records.
      metrics_.GetCounter("seedance_queue_cursor_resets_total", "", {{"reason", "unreadable"}})
          .Add();
      SEEDANCE_LOG_ERROR(name,
                         "durable queue: saved position not read ({}); re-sending from the "
                         "oldest retained record {} (duplicates, never loss)",
                         why, oldest);
      break;
    case CursorFile::kOk:
    case CursorFile::kText:
      // A position this process saved (a sink replaced by a reload) is checked against the
      // log as it is now; one from before the start, against the log found at the start.
      if (saved > (SavedThisRun(name) ? log_->next_sequence() : log_end_at_open_)) {
        // The log lost its tail (a power cut before the records were synced), its files were
        // removed, or the position is wrong: which, nothing tells. Re-sending what is retained
        // costs duplicates; trusting the position could lose every queued record.
        metrics_.GetCounter("seedance_queue_cursor_resets_total", "", {{"reason", "ahead"}}).Add();
        SEEDANCE_LOG_ERROR(name,
                           "durable queue: saved position {} is beyond the log's end {} (the "
                           "log lost its tail, its files were removed, or the position file is "
                           "wrong); clamped: re-sending from the oldest retained record {}",
                           saved, log_end_at_open_, oldest);
        delivered_below = saved;
        break;
      }
      start = std::max(start, saved);
      break;
  }
  std::unique_ptr<SinkCursor> cursor(new SinkCursor(*this, name, std::move(inputs), start));
  {
    std::lock_guard<std::mutex> lock(cursors_mu_);
    opened_.insert(name);
  }
  {
    std::lock_guard<std::mutex> lock(gaps_mu_);
    for (auto& [first, known] : gaps_) {
      if (known.loss && known.gap.last >= std::max(start, delivered_below)) {
        ReportLoss(name, known);
      }
    }
  }
  std::lock_guard<std::mutex> lock(cursors_mu_);
  cursors_.push_back(cursor.get());
  return cursor;
}

void DurableQueue::ReportLoss(const std::string& sink, KnownGap& known) {
  // gaps_mu_ held.
  const storage::SequenceGap& gap = known.gap;
  if (gap.reason == storage::LossReason::kDropped) {  // logged by DropOldest
    if (!known.counted) dropped_.Add(gap.records());
    known.counted = true;
    return;
  }
  if (!known.counted) {
    known.counted = true;
    Lost(gap.reason).Add(gap.records());
    if (gap.reason == storage::LossReason::kCorrupt) corrupt_.Add(gap.records());
  }
  uint64_t suppressed = 0;
  if (Limiter().Allow(fmt::format("lost/{}/{}", sink, storage::LossReasonName(gap.reason)),
                      &suppressed)) {
    SEEDANCE_LOG_ERROR(
        sink, "durable queue: {} record(s) lost before delivery (sequences {}–{}): {}{}",
        gap.records(), gap.first, gap.last, storage::LossReasonName(gap.reason),
        suppressed ? fmt::format(" ({} similar messages suppressed)", suppressed) : std::string());
  }
}

uint64_t DurableQueue::ReportGaps(const std::string& sink,
                                  const std::vector<storage::SequenceGap>& gaps) {
  std::lock_guard<std::mutex> lock(gaps_mu_);
  uint64_t counted = 0;
  for (const storage::SequenceGap& gap : gaps) {
    // The parts of `gap` no known gap covers are new. Known ones were reported when each sink
    // opened, for the sinks that had not delivered them. Known gaps never overlap: walk the
    // ones that meet `gap`, in order.
    uint64_t at = gap.first;
    std::vector<storage::SequenceGap> parts;
    auto it = gaps_.upper_bound(gap.first);
    if (it != gaps_.begin() && std::prev(it)->second.gap.last >= gap.first) --it;
    for (; it != gaps_.end() && it->first <= gap.last; ++it) {
      if (it->first > at) parts.push_back({at, it->first - 1, gap.reason});
      at = std::max(at, it->second.gap.last + 1);
    }
    if (at <= gap.last) parts.push_back({at, gap.last, gap.reason});
    for (const auto& part : parts) {
      counted += part.records();
      ReportLoss(sink, gaps_[part.first] = KnownGap{part});
    }
  }
  return counted;
}

void DurableQueue::SaveCursors() {
  {
    std::lock_guard<std::mutex> lock(cursors_mu_);
    for (SinkCursor* c : cursors_) c->Save();
  }
  SaveHead();
}

void DurableQueue::SaveHead() {
  // Processing thread (Tick) or shutdown; written like a position.
  const uint64_t end = log_->flushed_next();
  if (end == head_saved_) return;
  if (head_writer_->Write(end)) {
    head_saved_ = end;
  }
}

bool DurableQueue::Full() const {
  return no_space_.load(std::memory_order_relaxed) || log_->disk_bytes() >= config_.max_disk;
}

void DurableQueue::NoteNoSpace(const Status& status) {
  if (status.code() != StatusCode::kResourceExhausted) return;
  if (!no_space_.exchange(true)) {
    disk_full_.Add();
    SEEDANCE_LOG_ERROR("queue",
                       "{}: the file system is full; treated like the disk limit (when_full: "
                       "{}) until space returns",
                       status.message(), config_.drop_oldest ? "drop_oldest" : "block");
    // The file system is smaller than the queue's limits assume: smaller segments let the
    // sinks free space as they go, as they do at max_disk (segments of a quarter of it).
    const uint64_t smaller = std::max<uint64_t>(64 * 1024, log_->disk_bytes() / 4);
    if (smaller < log_->segment_bytes()) {
      log_->SetSegmentBytes(smaller);
      SEEDANCE_LOG_INFO("queue", "segments of {} bytes from now on (a quarter of what fit)",
                        smaller);
    }
  }
}

uint64_t DurableQueue::MinCommitted() {
  uint64_t min = UINT64_MAX;
  std::lock_guard<std::mutex> lock(cursors_mu_);
  for (SinkCursor* c : cursors_) min = std::min(min, c->committed());
  return min;
}

uint64_t DurableQueue::MinReadNext() {
  uint64_t min = UINT64_MAX;
  std::lock_guard<std::mutex> lock(cursors_mu_);
  for (SinkCursor* c : cursors_) min = std::min(min, c->read_next());
  return min;
}

bool DurableQueue::DropOldest() {
  // What every sink has read is in its memory and still delivered (it was over-counted as
  // dropped before: 43,479 counted where 43,466 were lost). What some sink has not read is
  // lost for it: counted now, each record once. A range a sink read, then let go of under the
  // memory budget, and reads again after its segment went, is counted when it finds it gone
  // (the reader reports it).
  auto dropped = log_->DropOldestSegment();
  if (!dropped) return false;
  const uint64_t read_below = MinReadNext();  // after the deletion: see SinkCursor::Read
  const auto [first, last] = *dropped;
  const uint64_t from = read_below == UINT64_MAX ? first : std::max(first, read_below);
  const uint64_t unread =
      from <= last
          ? ReportGaps("queue", {storage::SequenceGap{from, last, storage::LossReason::kDropped}})
          : 0;
  uint64_t suppressed = 0;
  if (unread > 0 && Limiter().Allow("drop_oldest", &suppressed)) {
    SEEDANCE_LOG_WARN("queue", "{}: dropped {} undelivered oldest record(s)",
                      no_space_ ? std::string("file system full")
                                : fmt::format("disk limit of {} bytes reached", config_.max_disk),
                      unread);
  }
  disk_gauge_.Set(static_cast<int64_t>(log_->disk_bytes()));
  return true;
}

Status DurableQueue::MakeRoom(std::chrono::steady_clock::time_point deadline) {
  if (config_.drop_oldest) {
    while (Full()) {
      if (no_space_ && log_->Flush().ok()) {
        no_space_ = false;
        break;
      }
      if (!DropOldest()) break;  // nothing left to drop
    }
    return Status::Ok();
  }
  const std::string why = no_space_
                              ? std::string("file system full")
                              : fmt::format("disk limit of {} bytes reached", config_.max_disk);
  // Make what is appended visible, so the sinks can drain it, then wait for them (their kicks
  // leave now, not at the end of the processing thread's batch).
  Commit().IgnoreError();  // a full file system is why we wait
  util::WakeBatcher::FlushCurrent();
  if (!Full()) return Status::Ok();  // the commit found space
  blocked_.Add();
  uint64_t suppressed = 0;
  if (Limiter().Allow("blocked", &suppressed)) {
    SEEDANCE_LOG_WARN("queue", "{}: waiting for the sinks; sources are not acknowledged meanwhile",
                      why);
  }
  auto give_up = [&] {
    auto now = std::chrono::steady_clock::now();
    return now >= deadline || now.time_since_epoch().count() >= shutdown_deadline_ns_.load();
  };
  while (Full() && !give_up()) {
    {
      std::unique_lock<std::mutex> lock(space_mu_);
      space_cv_.wait_for(lock, std::chrono::milliseconds(100));
    }
    if (no_space_ && Commit().ok()) break;  // space is back (Commit clears the flag)
  }
  return Status::Ok();
}

Status DurableQueue::Append(Output output, const Event& event,
                            std::chrono::steady_clock::time_point deadline) {
  if (Full()) SEEDANCE_RETURN_IF_ERROR(MakeRoom(deadline));
  auto seq = log_->AppendEncoded(static_cast<uint8_t>(output),
                                 [&event](std::string& out) { storage::EncodeEvent(event, out); });
  if (!seq) {
    NoteNoSpace(seq.error());
    return seq.error();
  }
  appended_.Add();
  return Status::Ok();
}

Status DurableQueue::AppendNoWait(Output output, const Event& event) {
  auto seq = log_->AppendEncoded(static_cast<uint8_t>(output),
                                 [&event](std::string& out) { storage::EncodeEvent(event, out); });
  if (!seq) {
    NoteNoSpace(seq.error());
    return seq.error();
  }
  appended_.Add();
  Status s = log_->Flush();
  if (!s.ok()) {
    NoteNoSpace(s);  // the record is the log's now, buffered: the next Commit writes it
    return Status::Ok();
  }
  MarkWritten();
  if (on_commit_) on_commit_();
  return Status::Ok();
}

Status DurableQueue::Commit() {
  Status s;
  if (config_.fsync.mode == QueueConfig::Fsync::kAlways) {
    auto t0 = std::chrono::steady_clock::now();
    s = log_->Sync();
    fsync_latency_.Observe(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  } else {
    s = log_->Flush();
  }
  auto write = [&] {
    return config_.fsync.mode == QueueConfig::Fsync::kAlways ? log_->Sync() : log_->Flush();
  };
  if (!s.ok() && s.code() == StatusCode::kResourceExhausted) {
    NoteNoSpace(s);
    // What every sink has delivered can go, even the only segment (sinks that caught up
    // finish nothing more, so nothing else would collect it), then try once more.
    CollectGarbage();
    s = write();
    while (!s.ok() && config_.drop_oldest && DropOldest()) s = write();  // then the policy
  }
  if (!s.ok()) {
    NoteNoSpace(s);
    return s;
  }
  if (no_space_.exchange(false)) {
    SEEDANCE_LOG_INFO("queue", "the file system has space again; writing resumed");
  }
  disk_gauge_.Set(static_cast<int64_t>(log_->disk_bytes()));
  MarkWritten();
  if (on_commit_) on_commit_();
  return Status::Ok();
}

void DurableQueue::Tick() {
  auto now = std::chrono::steady_clock::now();
  if (now - last_cursor_save_ >=
      storage::kCursorSaveInterval) {  // an idle sink's position is saved too
    last_cursor_save_ = now;
    {
      std::lock_guard<std::mutex> lock(cursors_mu_);
      for (SinkCursor* c : cursors_) c->MaybeSave(now);
    }
    SaveHead();
  }
}

void DurableQueue::CollectGarbage() {
  const uint64_t min = MinCommitted();
  if (min == UINT64_MAX) return;
  // On a full disk (or at the limit) a fully delivered active segment is emptied as well.
  log_->DeleteBefore(min, Full());
  {
    std::lock_guard<std::mutex> lock(gaps_mu_);  // gaps every sink has passed are history
    std::erase_if(gaps_, [&](const auto& entry) { return entry.second.gap.last < min; });
  }
  disk_gauge_.Set(static_cast<int64_t>(log_->disk_bytes()));
  space_cv_.notify_all();
}

}  // namespace seedance::storage
