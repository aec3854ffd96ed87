#include "sources/tail/tail_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>

#include "observe/component_stats.h"
#include "observe/metrics.h"
#include "seedance/plugin_context.h"
#include "sources/tail/file_identity.h"
#include "sources/tail/file_watcher.h"
#include "sources/tail/line_acks.h"
#include "sources/tail/line_splitter.h"
#include "sources/tail/open_files.h"
#include "sources/tail/positions.h"
#include "sources/tail/tail_options.h"
#include "sources/tail/tracked_file.h"
#include "util/crc32c.h"
#include "util/event_loop.h"
#include "util/json_check.h"
#include "util/log.h"
#include "util/strings.h"

namespace seedance::sources {
namespace {

constexpr size_t kReadPerTurn = 1 << 20;

class TailSource final : public Source, public Acknowledger {
 public:
  TailSource(TailOptions options, PluginContext ctx)
      : options_(std::move(options)),
        ctx_(std::move(ctx)),
        watcher_(ctx_.loop->io(), ctx_.name, options_.poll_interval, [this] { Scan(); }) {}

  ~TailSource() override {
    for (auto& [id, t] : files_) {
      if (t->fd >= 0) open_files_.Close(*t);
    }
  }

  Status Start(SourceOutput& output) override {
    output_ = &output;
    open_files_.LimitToDescriptors();
    if (ctx_.state_files == nullptr)
      return FailedPreconditionError("no state files to keep positions in");
    positions_name_ = "tail/" + ctx_.name + ".positions";
    if (ctx_.positions != nullptr && ctx_.positions->active()) checkpoint_ = ctx_.positions;
    Result<std::string> saved = ctx_.state_files->Read(positions_name_);
    if (!saved && saved.error().code() != StatusCode::kNotFound) return saved.error();
    for (FilePosition& p : ParsePositions(saved ? *saved : std::string())) {
      known_[FileId{p.device, p.inode}] = p;
    }
    first_start_ = known_.empty();
    watcher_.Start(options_.globs, options_.inotify);
    Scan();
    first_scan_done_ = true;
    return Status::Ok();
  }

  void Stop() override {
    stopped_ = true;
    watcher_.Stop();
  }

  void Close() override { SavePositionsNow(); }

  // Any thread (the pipeline's): the line that ends at the token's offset is stored.
  void Acknowledge(uint64_t token) override { acks_.Acknowledge(token); }

 private:
  // Makes room for one more open file (see OpenFiles::MakeRoom).
  void MakeRoom(const TrackedFile* keep) {
    open_files_.MakeRoom(keep, [this](const TrackedFile& t) {
      return t.lines.empty() && t.stored >= t.offset && AtEnd(t);
    });
  }

  // An open failed (errno): logged at most every 10 s; out of descriptors, the open files
  // are halved (never `keep`) so that the rest of the process gets some back.
  void CannotOpen(const std::string& path, const TrackedFile* keep) {
    const int err = errno;
    if (err == ENOENT) return;  // deleted since the scan: nothing to read, nothing to say
    uint64_t suppressed = 0;
    if (limiter_.Allow("open", &suppressed)) {
      SEEDANCE_LOG_WARN(ctx_.name, "cannot open {}: {}{}", path, std::strerror(err),
                        suppressed > 0 ? fmt::format(" ({} more since the last line)", suppressed)
                                       : std::string());
    }
    if (err == EMFILE || err == ENFILE) {
      open_files_.OutOfDescriptors(keep, err, std::chrono::steady_clock::now());
    }
  }

  // Opens a file closed by MakeRoom again, where it is now, if it is still the same file.
  bool Reopen(TrackedFile& t) {
    MakeRoom(&t);
    const int fd = OpenMatchedFile(t.current_path, t.identity);
    if (fd == kOpenFailed) CannotOpen(t.current_path, &t);
    if (fd < 0) return false;  // or another file took its name: found by identity next scan
    open_files_.Opened(t, fd);
    return true;
  }

  // Finds new and moved files, reads what was appended, records what is stored.
  void Scan() {
    if (stopped_) return;
    TakeAcks();
    // Every matching file by identity: a file renamed within the globs (app.log ->
    // app.log.1 under "app.log*") is the same file, followed where it went.
    std::map<FileId, MatchedFile> seen;
    std::string error;
    int err = 0;
    if (!MatchFiles(options_.globs, &seen, &error, &err)) {
      // A directory not listed says nothing of its files: none is taken as gone (let go, and
      // read again from its start when listed again) or as new. The open ones are read on.
      uint64_t suppressed = 0;
      if (limiter_.Allow("list", &suppressed)) {
        SEEDANCE_LOG_WARN(ctx_.name, "{}; files are looked for again every poll_interval{}", error,
                          suppressed > 0 ? fmt::format(" ({} more since the last line)", suppressed)
                                         : std::string());
      }
      if (err == EMFILE || err == ENFILE) {
        open_files_.OutOfDescriptors(nullptr, err, std::chrono::steady_clock::now());
      }
      if (!paused_) ReadAll();
      SavePositionsSoon();
      return;
    }
    // A file no longer matched (renamed out of the globs' reach, or deleted) is read to its
    // end and let go once its lines are stored.
    const auto now = std::chrono::steady_clock::now();
    open_files_.RaiseWhenCalm(now);
    for (auto& [id, t] : files_) {
      auto it = seen.find(t->identity);
      const bool was_moved = t->moved_away;
      t->moved_away = it == seen.end();
      if (!t->moved_away) t->current_path = it->second.path;
      if (t->moved_away) {
        struct stat st {};
        const uint64_t size =
            t->fd >= 0 && ::fstat(t->fd, &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
        if (!was_moved || size != t->size_seen) t->quiet_since = now;
        t->size_seen = size;
      } else if (t->fd < 0 && it->second.size != t->offset) {
        // Closed for room, and it grew (or was truncated): read it again, now, before the
        // next file opened closes it (with a budget of a few files, most would never be read).
        if (Reopen(*t) && !paused_) Read(*t);
      }
    }
    for (const auto& [key, found] : seen) {
      if (by_inode_.count(key) != 0) continue;
      struct stat st {};
      if (::stat(found.path.c_str(), &st) != 0) continue;
      TrackedFile* t = Open(found.path, st);
      if (t != nullptr && !paused_) Read(*t);  // likewise
    }
    if (!paused_) ReadAll();
    for (auto it = files_.begin(); it != files_.end();) {
      TrackedFile& t = *it->second;
      if (t.moved_away && now - t.quiet_since >= options_.rotate_wait && t.lines.empty() &&
          AtEnd(t) && t.stored >= t.offset) {
        by_inode_.erase(t.identity);
        if (checkpoint_ != nullptr) checkpoint_->CloseStream(t.stream);
        if (t.fd >= 0) open_files_.Close(t);
        it = files_.erase(it);
      } else {
        ++it;
      }
    }
    SavePositionsSoon();
  }

  // Closed for room: nothing more can be read until it is opened again.
  bool AtEnd(const TrackedFile& t) const {
    struct stat st {};
    return t.fd < 0 || ::fstat(t.fd, &st) != 0 || static_cast<uint64_t>(st.st_size) <= t.offset;
  }

  // Follows the file now at `path` (null when it cannot be opened).
  TrackedFile* Open(const std::string& path, const struct stat& st) {
    MakeRoom(nullptr);
    const FileId identity = FileIdOf(st);
    const int fd = OpenMatchedFile(path, identity);
    if (fd == kOpenFailed) CannotOpen(path, nullptr);
    if (fd < 0) return nullptr;
    auto t = std::make_unique<TrackedFile>(options_.max_line);
    t->id = next_file_++;
    t->path = t->current_path = path;
    open_files_.Opened(*t, fd);
    t->identity = identity;
    // Where to start: the stored position when this is the same file (inode and first bytes);
    // for a file already there at the very first start, its end (read_from: end); otherwise
    // (a new file, or one replaced while Seedance was down) its beginning.
    uint64_t start = 0;
    auto known = known_.find(t->identity);
    PositionCheckpoint::Committed committed;
    if (checkpoint_ != nullptr && checkpoint_->Find(ctx_.name, t->identity.Key(), &committed) &&
        SameHead(fd, committed.head_crc, committed.head_bytes)) {
      // With stateful processors the checkpoint says where the state ends: it was committed
      // with the lines it counted, before the positions file (saved once they are
      // acknowledged) could follow.
      start = std::min<uint64_t>(committed.offset, static_cast<uint64_t>(st.st_size));
    } else if (known != known_.end() &&
               SameHead(fd, known->second.fingerprint, known->second.head_bytes)) {
      start = std::min<uint64_t>(known->second.offset, static_cast<uint64_t>(st.st_size));
    } else if (!first_scan_done_ && first_start_ && options_.from_end) {
      start = static_cast<uint64_t>(st.st_size);
    }
    t->offset = t->stored = start;
    t->lines.Restart(start);
    if (start > 0) t->head = ReadHead(fd, start);
    if (checkpoint_ != nullptr) {
      t->stream = checkpoint_->OpenStream(ctx_.name, t->identity.Key());
      ReportHead(*t);
    }
    // One line per file for the first few; then one every 10 s with the count (5,000 files
    // made 5,000 lines).
    uint64_t suppressed = 0;
    if (++followed_ <= kFollowLinesLogged || limiter_.Allow("following", &suppressed)) {
      SEEDANCE_LOG_INFO(ctx_.name, "following {} from byte {}{}", path, start,
                        suppressed > 0
                            ? fmt::format(" ({} more files since the last line)", suppressed)
                            : std::string());
    }
    by_inode_[t->identity] = t->id;
    TrackedFile* opened = t.get();
    files_[opened->id] = std::move(t);
    return opened;
  }

  void ReadAll() {
    for (auto& [id, t] : files_) {
      // Closed for room: opened again when it grows (Scan); the lines it read before, which
      // the pipeline refused then, are offered from its buffer (before, they stayed there
      // until the file grew: 1 line in 20,000 one-line files, never delivered).
      const bool offered = t->fd < 0 ? EmitLines(*t) : Read(*t);
      if (!offered) return;  // the pipeline is full: resumed by WhenWritable
    }
  }

  // Reads what was appended and emits its complete lines. False when the pipeline refused a
  // line (it stays in the buffer).
  bool Read(TrackedFile& t) {
    struct stat st {};
    if (::fstat(t.fd, &st) == 0 && static_cast<uint64_t>(st.st_size) < t.offset) {
      // Copy-truncate: the file was emptied (its content copied elsewhere) and is written
      // again from its start.
      SEEDANCE_LOG_INFO(ctx_.name, "{} was truncated; reading it from its beginning", t.path);
      t.offset = t.stored = 0;
      ++t.epoch;
      t.lines.Restart(0);
      t.head.clear();
      if (checkpoint_ != nullptr) {  // new content: a new stream; the old one's lines lose
        checkpoint_->ReleaseStream(t.stream);
        t.stream = checkpoint_->OpenStream(ctx_.name, t.identity.Key());
        t.head_reported = 0;
        ReportHead(t);
      }
    }
    char chunk[64 * 1024];
    // At most kReadPerTurn bytes per file and turn: a large file must not hold the event loop
    // (the sinks run there too); the next turn follows at once.
    size_t budget = kReadPerTurn;
    while (true) {
      if (!EmitLines(t)) return false;
      if (budget == 0) {
        watcher_.ScanIn(std::chrono::nanoseconds(0));
        return true;
      }
      const ssize_t n =
          ::pread(t.fd, chunk, std::min(sizeof chunk, budget), static_cast<off_t>(t.offset));
      if (n <= 0) return true;
      open_files_.Touch(t);
      budget -= static_cast<size_t>(n);
      if (t.head.size() < kFingerprintBytes && t.offset == t.head.size()) {
        t.head.append(chunk,
                      std::min<size_t>(kFingerprintBytes - t.head.size(), static_cast<size_t>(n)));
      }
      t.lines.Append(chunk, static_cast<size_t>(n));
      t.offset += static_cast<uint64_t>(n);
      if (checkpoint_ != nullptr && t.head.size() != t.head_reported) ReportHead(t);
    }
  }

  void ReportHead(TrackedFile& t) {
    checkpoint_->SetHead(t.stream, util::Crc32c(t.head), static_cast<uint32_t>(t.head.size()));
    t.head_reported = t.head.size();
  }

  // Emits the file's complete lines; false when the pipeline refused one (it is offered again
  // once there is room).
  bool EmitLines(TrackedFile& t) {
    bool refused = false;
    while (auto piece = t.lines.Peek()) {
      if (piece->kind == LinePiece::Kind::kDone) {
        MarkDone(t, piece->end);
      } else if (!(piece->kind == LinePiece::Kind::kLine ? EmitLine(t, *piece)
                                                         : EmitTooLong(t, *piece))) {
        refused = true;
        break;
      }
      t.lines.Take();
    }
    t.lines.Compact();
    if (refused) Pause();
    return !refused;
  }

  Event MakeEvent(const TrackedFile& t, std::string_view payload) {
    Event e = output_->TakeEvent();
    e.source.assign(ctx_.name);
    e.topic.assign(options_.topic.empty() ? t.path : options_.topic);
    e.payload.assign(payload.data(), payload.size());
    e.format = options_.format;
    e.ingest_time_ns = e.event_time_ns = ctx_.now_ns();
    return e;
  }

  bool EmitLine(TrackedFile& t, const LinePiece& piece) {
    const std::string_view line = piece.text;
    const uint64_t end = piece.end;
    Event e = MakeEvent(t, line);
    const uint64_t token = NewToken(t, end);
    if (options_.format == PayloadFormat::kJson) {
      if (Status s = CheckJson(line); !s.ok()) {
        e.format = PayloadFormat::kRaw;
        e.SetHeader("tail_line", std::to_string(piece.line_no));
        if (!output_->TryEmitInvalid(
                e, AckHandle{this, token, 0, t.stream, end},
                "line " + std::to_string(piece.line_no) + " of " + t.path + ": " + s.message())) {
          DropToken(token);
          return false;
        }
        ctx_.stats->errors.Add();
        return true;
      }
    }
    if (!output_->TryEmit(e, AckHandle{this, token, 0, t.stream, end})) {
      DropToken(token);
      return false;
    }
    ctx_.stats->events_in.Add();
    ctx_.stats->events_out.Add();
    return true;
  }

  // A line over max_line: its first KiB goes to `error` with the reason.
  bool EmitTooLong(TrackedFile& t, const LinePiece& piece) {
    Event e = MakeEvent(t, piece.text);
    e.format = PayloadFormat::kRaw;
    const uint64_t token = NewToken(t, piece.end);
    if (!output_->TryEmitInvalid(e, AckHandle{this, token, 0, t.stream, piece.end},
                                 "line " + std::to_string(piece.line_no) + " of " + t.path +
                                     " is longer than max_line (" +
                                     std::to_string(options_.max_line) +
                                     " bytes); its first KiB kept")) {
      DropToken(token);
      return false;
    }
    ctx_.stats->errors.Add();
    return true;
  }

  uint64_t NewToken(const TrackedFile& t, uint64_t end) {
    return acks_.Register(StoredLine{t.id, t.epoch, end});
  }
  void DropToken(uint64_t token) { acks_.Withdraw(token); }
  void MarkDone(TrackedFile& t, uint64_t end) { acks_.Done(StoredLine{t.id, t.epoch, end}); }

  void Pause() {
    if (paused_) return;
    paused_ = true;
    output_->WhenWritable([this] {
      paused_ = false;
      watcher_.ScanIn(std::chrono::nanoseconds(0));
    });
  }

  // Moves each file's stored offset past the lines acknowledged so far: the pipeline stores
  // a source's events in the order they were emitted, so no earlier line is still pending.
  void TakeAcks() {
    for (const StoredLine& l : acks_.TakeStored()) {
      auto it = files_.find(l.file);
      if (it != files_.end() && it->second->epoch == l.epoch) {
        it->second->stored = std::max(it->second->stored, l.end);
      }
    }
  }

  // At most once per poll_interval (each save is an fdatasync), and at Close.
  void SavePositionsSoon() {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_save_ < options_.poll_interval) return;
    last_save_ = now;
    SavePositionsNow();
  }

  void SavePositionsNow() {
    if (positions_name_.empty()) return;
    TakeAcks();
    std::vector<FilePosition> now;
    for (const auto& [id, t] : files_) {
      // The fingerprint covers the head only as far as it is stored: a position must not
      // name bytes a restart would not find stored.
      const size_t head = static_cast<size_t>(std::min<uint64_t>(t->head.size(), t->stored));
      now.push_back(FilePosition{t->identity.device, t->identity.inode, t->stored,
                                 util::Crc32c(std::string_view(t->head).substr(0, head)),
                                 static_cast<uint32_t>(head), t->current_path});
    }
    if (now == saved_) return;
    if (Status s = ctx_.state_files->Replace(positions_name_, FormatPositions(now)); !s.ok()) {
      uint64_t suppressed = 0;
      if (limiter_.Allow("save", &suppressed)) {
        SEEDANCE_LOG_WARN(ctx_.name,
                          "tail positions not saved (kept in memory, saved again "
                          "later): {}",
                          s.message());
      }
      return;
    }
    saved_ = std::move(now);
  }

  TailOptions options_;
  PluginContext ctx_;
  SourceOutput* output_ = nullptr;
  PositionCheckpoint* checkpoint_ = nullptr;  // set when the pipeline keeps state
  FileWatcher watcher_;
  bool stopped_ = false;
  bool paused_ = false;
  bool first_start_ = false;  // no positions file: files found now honour read_from
  bool first_scan_done_ = false;
  std::string positions_name_;                              // in ctx_.state_files
  std::map<FileId, FilePosition> known_;                    // from the last run
  std::map<uint64_t, std::unique_ptr<TrackedFile>> files_;  // by id
  std::map<FileId, uint64_t> by_inode_;
  uint64_t next_file_ = 1;
  std::vector<FilePosition> saved_;
  std::chrono::steady_clock::time_point last_save_{};
  LineAcks acks_;
  util::LogLimiter limiter_;
  static constexpr uint64_t kFollowLinesLogged = 16;
  uint64_t followed_ = 0;
  OpenFiles open_files_{options_.max_open_files, ctx_.name, *ctx_.metrics};
};

}  // namespace

SourceFactory TailSourceFactory() {
  SourceFactory f;
  f.info.type = "tail";
  f.info.kind = PluginKind::kSource;
  f.info.summary =
      "Follows lines appended to files (NDJSON or raw) across rotation; positions kept once "
      "stored.";
  f.info.params = TailSchema().Specs();
  f.create = [](const Params& p, PluginContext& ctx) -> Result<std::unique_ptr<Source>> {
    SEEDANCE_ASSIGN_OR_RETURN(TailOptions o, TailSchema().Bind(p));
    return std::unique_ptr<Source>(new TailSource(std::move(o), ctx));
  };
  return f;
}

}  // namespace seedance::sources
