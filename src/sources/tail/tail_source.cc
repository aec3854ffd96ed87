#include "sources/tail/tail_source.h"

#include <fcntl.h>
#include <glob.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <filesystem>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include "observe/component_stats.h"
#include "observe/metrics.h"
#include "seedance/options.h"
#include "seedance/plugin_context.h"
#include "sources/tail/positions.h"
#include "util/crc32c.h"
#include "util/event_loop.h"
#include "util/json_check.h"
#include "util/log.h"
#include "util/strings.h"

namespace seedance::sources {
namespace {

namespace asio = boost::asio;

constexpr size_t kReadPerTurn = 1 << 20;

struct TailOptions {
  std::vector<std::string> globs;
  std::string topic;  // empty: the file's path
  PayloadFormat format = PayloadFormat::kJson;
  size_t max_line = 0;
  bool from_end = true;  // for files already there at the first start
  std::chrono::nanoseconds poll_interval{0};
  bool inotify = true;
  // A file deleted or renamed out of the globs' reach is still read for this long after its
  // last growth (a writer may append through its open descriptor until it reopens the path).
  std::chrono::nanoseconds rotate_wait{0};
  int64_t max_open_files = 0;
};

// Descriptors the tail source leaves to the rest of the process (the durable queue's segments
// and cursors, sink and source connections, listeners): its open files stay below the
// process's limit less these.
constexpr uint64_t kReservedDescriptors = 256;

// One file being read.
struct Tracked {
  uint64_t id = 0;
  std::string path;          // where it was opened: the events' topic
  std::string current_path;  // where it is now (it may have been renamed)
  int fd = -1;               // -1: closed to stay within max_open_files; opened again by identity
  uint64_t device = 0, inode = 0;
  std::list<Tracked*>::iterator lru;  // while open: its place in the open files' order
  uint64_t offset = 0;                // bytes consumed into `buffer` or emitted
  std::string buffer;                 // read, not yet emitted (a partial line at least)
  uint64_t buffer_start = 0;          // file offset of buffer[0]
  bool skipping = false;              // inside a line over max_line: dropped up to its newline
  uint64_t line_no = 0;
  std::string head;         // the file's first bytes, up to kFingerprintBytes
  bool moved_away = false;  // the path names another file now, or none: read to the end
  // Moved away: when it last grew (or was first seen moved); let go rotate_wait after it.
  std::chrono::steady_clock::time_point quiet_since;
  uint64_t size_seen = 0;
  uint64_t stored = 0;  // offset past the last line stored (acknowledged)
  uint64_t epoch = 0;   // +1 at each truncation: acks of lines from before it are stale
  // With stateful processors: the file's stream in the checkpoint (one per epoch), and how
  // much of its head the checkpoint knows.
  uint32_t stream = 0;
  size_t head_reported = 0;
};

class TailSource final : public Source, public Acknowledger {
 public:
  TailSource(TailOptions options, PluginContext ctx)
      : options_(std::move(options)),
        ctx_(std::move(ctx)),
        timer_(ctx_.loop->io()),
        notify_(ctx_.loop->io()) {}

  ~TailSource() override {
    for (auto& [id, t] : files_) {
      if (t->fd >= 0) ::close(t->fd);
    }
  }

  Status Start(SourceOutput& output) override {
    output_ = &output;
    max_open_ = OpenFileBudget();
    const std::string dir = ctx_.data_dir + "/tail";
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return FailedPreconditionError("cannot create " + dir + ": " + ec.message());
    positions_path_ = dir + "/" + ctx_.name + ".positions";
    if (ctx_.positions != nullptr && ctx_.positions->active()) checkpoint_ = ctx_.positions;
    for (FilePosition& p : LoadPositions(positions_path_)) {
      known_[{p.device, p.inode}] = p;
    }
    first_start_ = known_.empty();
    if (options_.inotify) StartInotify();
    Scan();
    first_scan_done_ = true;
    ScheduleScan(options_.poll_interval);
    return Status::Ok();
  }

  void Stop() override {
    stopped_ = true;
    timer_.cancel();
    boost::system::error_code ec;
    notify_.close(ec);
  }

  void Close() override { SavePositionsNow(); }

  // Any thread (the pipeline's): the line that ends at the token's offset is stored.
  void Acknowledge(uint64_t token) override {
    std::lock_guard<std::mutex> lock(ack_mu_);
    auto it = in_flight_.find(token);
    if (it == in_flight_.end()) return;
    acked_.push_back(it->second);
    in_flight_.erase(it);
  }

 private:
  // max_open_files, lowered to what the process's descriptor limit leaves (said once).
  size_t OpenFileBudget() {
    size_t budget = static_cast<size_t>(std::max<int64_t>(1, options_.max_open_files));
    rlimit rl{};
    if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
      const uint64_t room = rl.rlim_cur > 2 * kReservedDescriptors
                                ? rl.rlim_cur - kReservedDescriptors
                                : rl.rlim_cur / 2;
      if (room < budget) {
        SEEDANCE_LOG_WARN(ctx_.name,
                          "max_open_files {} lowered to {}: the descriptor limit is {}, and {} "
                          "are kept for the queue, sinks and listeners",
                          budget, room, static_cast<uint64_t>(rl.rlim_cur), rl.rlim_cur - room);
        budget = std::max<size_t>(1, static_cast<size_t>(room));
      }
    }
    return budget;
  }

  // Makes room for one more open file: closes one of the least recently active (not `keep`),
  // a quiet one (read to its end, every line stored) among the kQuietLookahead least recent if
  // there is one. Its state stays; it is opened again, by identity, when it grows. O(1): the
  // open files are kept in the order of their last activity.
  void MakeRoom(const Tracked* keep) {
    if (open_lru_.size() < max_open_) return;
    Tracked* victim = nullptr;
    size_t looked = 0;
    for (Tracked* t : open_lru_) {
      if (t == keep) continue;
      if (victim == nullptr) victim = t;  // the least recently active
      if (t->buffer.empty() && t->stored >= t->offset && AtEnd(*t)) {
        victim = t;
        break;
      }
      if (++looked == kQuietLookahead) break;
    }
    if (victim == nullptr) return;
    CloseFile(*victim);
    closed_for_room_->Add();
    if (!warned_open_limit_) {
      warned_open_limit_ = true;
      SEEDANCE_LOG_WARN(ctx_.name,
                        "more files than max_open_files ({}): the least recently active are "
                        "closed and opened again when they grow (logged once; "
                        "seedance_tail_files_closed_total)",
                        max_open_);
    }
  }

  // The open files, least recently active first.
  void Opened(Tracked& t, int fd) {
    t.fd = fd;
    t.lru = open_lru_.insert(open_lru_.end(), &t);
  }
  void Touch(Tracked& t) { open_lru_.splice(open_lru_.end(), open_lru_, t.lru); }
  void CloseFile(Tracked& t) {
    ::close(t.fd);
    t.fd = -1;
    open_lru_.erase(t.lru);
  }

  // Opens a file closed by MakeRoom again, where it is now, if it is still the same file.
  bool Reopen(Tracked& t) {
    MakeRoom(&t);
    const int fd = ::open(t.current_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    struct stat st {};
    if (::fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_dev) != t.device ||
        static_cast<uint64_t>(st.st_ino) != t.inode) {
      ::close(fd);  // another file took its name: found again by identity at the next scan
      return false;
    }
    Opened(t, fd);
    return true;
  }

  struct Line {
    uint64_t file;
    uint64_t epoch;
    uint64_t end;
  };

  void StartInotify() {
    const int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd < 0) {
      SEEDANCE_LOG_WARN(
          ctx_.name, "inotify unavailable ({}); polling every {} ms", std::strerror(errno),
          std::chrono::duration_cast<std::chrono::milliseconds>(options_.poll_interval).count());
      return;
    }
    std::set<std::string> dirs;
    for (const std::string& g : options_.globs) {
      const std::string dir = std::filesystem::path(g).parent_path().string();
      if (dir.find_first_of("*?[") == std::string::npos) dirs.insert(dir.empty() ? "." : dir);
    }
    for (const std::string& d : dirs) {
      ::inotify_add_watch(
          fd, d.c_str(),
          IN_CREATE | IN_MODIFY | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE | IN_CLOSE_WRITE);
    }
    notify_.assign(fd);
    WaitInotify();
  }

  void WaitInotify() {
    notify_.async_wait(asio::posix::stream_descriptor::wait_read,
                       [this](const boost::system::error_code& ec) {
                         if (ec || stopped_) return;
                         char events[4096];
                         while (::read(notify_.native_handle(), events, sizeof events) > 0) {
                         }
                         ScheduleScan(std::chrono::milliseconds(0));
                         WaitInotify();
                       });
  }

  void ScheduleScan(std::chrono::nanoseconds after) {
    if (stopped_) return;
    const auto when = std::chrono::steady_clock::now() + after;
    if (scan_pending_ && when >= timer_.expiry()) return;
    scan_pending_ = true;
    timer_.expires_at(when);
    timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec) return;
      scan_pending_ = false;
      Scan();
      ScheduleScan(options_.poll_interval);
    });
  }

  // Finds new and moved files, reads what was appended, records what is stored.
  void Scan() {
    if (stopped_) return;
    TakeAcks();
    // Every matching file by identity: a file renamed within the globs (app.log ->
    // app.log.1 under "app.log*") is the same file, followed where it went.
    struct Seen {
      std::string path;
      uint64_t size = 0;
    };
    std::map<std::pair<uint64_t, uint64_t>, Seen> seen;
    for (const std::string& pattern : options_.globs) {
      glob_t g{};
      if (::glob(pattern.c_str(), GLOB_NOSORT, nullptr, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; ++i) {
          struct stat st {};
          if (::stat(g.gl_pathv[i], &st) != 0 || !S_ISREG(st.st_mode)) continue;
          seen.emplace(
              std::make_pair(static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)),
              Seen{g.gl_pathv[i], static_cast<uint64_t>(st.st_size)});
        }
      }
      ::globfree(&g);
    }
    // A file no longer matched (renamed out of the globs' reach, or deleted) is read to its
    // end and let go once its lines are stored.
    const auto now = std::chrono::steady_clock::now();
    for (auto& [id, t] : files_) {
      auto it = seen.find({t->device, t->inode});
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
        Reopen(*t);  // closed for room, and it grew (or was truncated): read it again
      }
    }
    for (const auto& [key, found] : seen) {
      if (by_inode_.count(key) != 0) continue;
      struct stat st {};
      if (::stat(found.path.c_str(), &st) != 0) continue;
      Open(found.path, st);
    }
    open_gauge_->Set(static_cast<int64_t>(open_lru_.size()));
    if (!paused_) ReadAll();
    for (auto it = files_.begin(); it != files_.end();) {
      Tracked& t = *it->second;
      if (t.moved_away && now - t.quiet_since >= options_.rotate_wait && t.buffer.empty() &&
          AtEnd(t) && t.stored >= t.offset) {
        by_inode_.erase({t.device, t.inode});
        if (checkpoint_ != nullptr) checkpoint_->CloseStream(t.stream);
        if (t.fd >= 0) CloseFile(t);
        it = files_.erase(it);
      } else {
        ++it;
      }
    }
    SavePositionsSoon();
  }

  // Closed for room: nothing more can be read until it is opened again.
  bool AtEnd(const Tracked& t) const {
    struct stat st {};
    return t.fd < 0 || ::fstat(t.fd, &st) != 0 || static_cast<uint64_t>(st.st_size) <= t.offset;
  }

  void Open(const std::string& path, const struct stat& st) {
    MakeRoom(nullptr);
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      uint64_t suppressed = 0;
      if (limiter_.Allow("open", &suppressed)) {
        SEEDANCE_LOG_WARN(ctx_.name, "cannot open {}: {}", path, std::strerror(errno));
      }
      return;
    }
    auto t = std::make_unique<Tracked>();
    t->id = next_file_++;
    t->path = t->current_path = path;
    Opened(*t, fd);
    t->device = st.st_dev;
    t->inode = st.st_ino;
    // Where to start: the stored position when this is the same file (inode and first bytes);
    // for a file already there at the very first start, its end (read_from: end); otherwise
    // (a new file, or one replaced while Seedance was down) its beginning.
    uint64_t start = 0;
    auto known = known_.find({t->device, t->inode});
    PositionCheckpoint::Committed committed;
    if (checkpoint_ != nullptr && checkpoint_->Find(ctx_.name, FileKey(*t), &committed) &&
        SameHead(fd, FilePosition{.fingerprint = committed.head_crc,
                                  .head_bytes = committed.head_bytes})) {
      // With stateful processors the checkpoint says where the state ends: it was committed
      // with the lines it counted, before the positions file (saved once they are
      // acknowledged) could follow.
      start = std::min<uint64_t>(committed.offset, static_cast<uint64_t>(st.st_size));
    } else if (known != known_.end() && SameHead(fd, known->second)) {
      start = std::min<uint64_t>(known->second.offset, static_cast<uint64_t>(st.st_size));
    } else if (!first_scan_done_ && first_start_ && options_.from_end) {
      start = static_cast<uint64_t>(st.st_size);
    }
    t->offset = t->buffer_start = t->stored = start;
    if (start > 0) LoadHead(*t);
    if (checkpoint_ != nullptr) {
      t->stream = checkpoint_->OpenStream(ctx_.name, FileKey(*t), std::chrono::nanoseconds(0));
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
    by_inode_[{t->device, t->inode}] = t->id;
    files_[t->id] = std::move(t);
  }

  // Whether the file starts with the bytes it started with when its position was saved: an
  // inode reused by a new file (or a file replaced while Seedance was down) does not.
  static bool SameHead(int fd, const FilePosition& known) {
    if (known.head_bytes == 0) return true;  // saved before anything was stored
    char head[kFingerprintBytes];
    const size_t want = std::min<size_t>(known.head_bytes, sizeof head);
    const ssize_t n = ::pread(fd, head, want, 0);
    return n == static_cast<ssize_t>(want) &&
           util::Crc32c(std::string_view(head, want)) == known.fingerprint;
  }

  void LoadHead(Tracked& t) {
    char head[kFingerprintBytes];
    const ssize_t n = ::pread(t.fd, head, std::min<uint64_t>(sizeof head, t.offset), 0);
    if (n > 0) t.head.assign(head, static_cast<size_t>(n));
  }

  void ReadAll() {
    for (auto& [id, t] : files_) {
      if (t->fd < 0) continue;  // closed for room: opened again when it grows (Scan)
      if (!Read(*t)) return;    // the pipeline is full: resumed by WhenWritable
    }
  }

  // Reads what was appended and emits its complete lines. False when the pipeline refused a
  // line (it stays in the buffer).
  bool Read(Tracked& t) {
    struct stat st {};
    if (::fstat(t.fd, &st) == 0 && static_cast<uint64_t>(st.st_size) < t.offset) {
      // Copy-truncate: the file was emptied (its content copied elsewhere) and is written
      // again from its start.
      SEEDANCE_LOG_INFO(ctx_.name, "{} was truncated; reading it from its beginning", t.path);
      t.offset = t.buffer_start = t.stored = 0;
      ++t.epoch;
      t.buffer.clear();
      t.skipping = false;
      t.head.clear();
      if (checkpoint_ != nullptr) {  // new content: a new stream; the old one's lines lose
        checkpoint_->ReleaseStream(t.stream);
        t.stream = checkpoint_->OpenStream(ctx_.name, FileKey(t), std::chrono::nanoseconds(0));
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
        ScheduleScan(std::chrono::milliseconds(0));
        return true;
      }
      const ssize_t n =
          ::pread(t.fd, chunk, std::min(sizeof chunk, budget), static_cast<off_t>(t.offset));
      if (n <= 0) return true;
      Touch(t);
      budget -= static_cast<size_t>(n);
      if (t.head.size() < kFingerprintBytes && t.offset == t.head.size()) {
        t.head.append(chunk,
                      std::min<size_t>(kFingerprintBytes - t.head.size(), static_cast<size_t>(n)));
      }
      t.buffer.append(chunk, static_cast<size_t>(n));
      t.offset += static_cast<uint64_t>(n);
      if (checkpoint_ != nullptr && t.head.size() != t.head_reported) ReportHead(t);
    }
  }

  // The file's identity in the checkpoint: device and inode (its head tells reuse apart).
  static std::string FileKey(const Tracked& t) {
    return std::to_string(t.device) + ":" + std::to_string(t.inode);
  }
  void ReportHead(Tracked& t) {
    checkpoint_->SetHead(t.stream, util::Crc32c(t.head), static_cast<uint32_t>(t.head.size()));
    t.head_reported = t.head.size();
  }

  bool EmitLines(Tracked& t) {
    size_t pos = 0;
    bool refused = false;
    while (pos < t.buffer.size()) {
      const size_t nl = t.buffer.find('\n', pos);
      if (nl == std::string::npos) {
        if (t.buffer.size() - pos > options_.max_line && !t.skipping) {
          // Too long to ever be a line we take: reported once, the rest dropped up to its
          // newline.
          if (!EmitTooLong(t, pos, t.line_no + 1)) {
            refused = true;
            break;
          }
          t.skipping = true;
        }
        if (t.skipping) pos = t.buffer.size();
        break;
      }
      const uint64_t end = t.buffer_start + nl + 1;
      if (t.skipping) {
        t.skipping = false;
        ++t.line_no;
        pos = nl + 1;
        MarkDone(t, end);
        continue;
      }
      std::string_view line(t.buffer.data() + pos, nl - pos);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      ++t.line_no;
      if (line.size() > options_.max_line) {
        if (!EmitTooLong(t, pos, t.line_no)) {
          --t.line_no;
          refused = true;
          break;
        }
        pos = nl + 1;
        continue;
      }
      if (line.find_first_not_of(" \t") == std::string_view::npos) {
        pos = nl + 1;
        MarkDone(t, end);
        continue;
      }
      if (!EmitLine(t, line, end)) {
        --t.line_no;
        refused = true;
        break;
      }
      pos = nl + 1;
    }
    t.buffer.erase(0, pos);
    t.buffer_start += pos;
    if (refused) Pause();
    return !refused;
  }

  Event MakeEvent(const Tracked& t, std::string_view payload) {
    Event e = output_->TakeEvent();
    e.source.assign(ctx_.name);
    e.topic.assign(options_.topic.empty() ? t.path : options_.topic);
    e.payload.assign(payload.data(), payload.size());
    e.format = options_.format;
    e.ingest_time_ns = e.event_time_ns = ctx_.now_ns();
    return e;
  }

  bool EmitLine(Tracked& t, std::string_view line, uint64_t end) {
    Event e = MakeEvent(t, line);
    const uint64_t token = NewToken(t, end);
    if (options_.format == PayloadFormat::kJson) {
      if (Status s = CheckJson(line); !s.ok()) {
        e.format = PayloadFormat::kRaw;
        e.SetHeader("tail_line", std::to_string(t.line_no));
        if (!output_->TryEmitInvalid(
                e, AckHandle{this, token, 0, t.stream, end},
                "line " + std::to_string(t.line_no) + " of " + t.path + ": " + s.message())) {
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
  bool EmitTooLong(Tracked& t, size_t pos, uint64_t line_no) {
    const size_t nl = t.buffer.find('\n', pos);
    const uint64_t end =
        nl == std::string::npos ? t.buffer_start + t.buffer.size() : t.buffer_start + nl + 1;
    Event e = MakeEvent(t, std::string_view(t.buffer).substr(pos, 1024));
    e.format = PayloadFormat::kRaw;
    const uint64_t token = NewToken(t, end);
    if (!output_->TryEmitInvalid(
            e, AckHandle{this, token, 0, t.stream, end},
            "line " + std::to_string(line_no) + " of " + t.path + " is longer than max_line (" +
                std::to_string(options_.max_line) + " bytes); its first KiB kept")) {
      DropToken(token);
      return false;
    }
    ctx_.stats->errors.Add();
    return true;
  }

  uint64_t NewToken(const Tracked& t, uint64_t end) {
    std::lock_guard<std::mutex> lock(ack_mu_);
    const uint64_t token = next_token_++;
    in_flight_[token] = Line{t.id, t.epoch, end};
    return token;
  }
  void DropToken(uint64_t token) {
    std::lock_guard<std::mutex> lock(ack_mu_);
    in_flight_.erase(token);
    --next_token_;
  }
  // A line that needs no acknowledgement (blank, the rest of a too long one): stored once
  // everything before it is.
  void MarkDone(Tracked& t, uint64_t end) {
    std::lock_guard<std::mutex> lock(ack_mu_);
    acked_.push_back(Line{t.id, t.epoch, end});
  }

  void Pause() {
    if (paused_) return;
    paused_ = true;
    output_->WhenWritable([this] {
      paused_ = false;
      ScheduleScan(std::chrono::milliseconds(0));
    });
  }

  // Moves each file's stored offset past the lines acknowledged so far: the pipeline stores
  // a source's events in the order they were emitted, so no earlier line is still pending.
  void TakeAcks() {
    std::vector<Line> acked;
    {
      std::lock_guard<std::mutex> lock(ack_mu_);
      acked.swap(acked_);
    }
    for (const Line& l : acked) {
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
    if (positions_path_.empty()) return;
    TakeAcks();
    std::vector<FilePosition> now;
    for (const auto& [id, t] : files_) {
      // The fingerprint covers the head only as far as it is stored: a position must not
      // name bytes a restart would not find stored.
      const size_t head = static_cast<size_t>(std::min<uint64_t>(t->head.size(), t->stored));
      now.push_back(FilePosition{t->device, t->inode, t->stored,
                                 util::Crc32c(std::string_view(t->head).substr(0, head)),
                                 static_cast<uint32_t>(head), t->current_path});
    }
    if (now == saved_) return;
    if (Status s = SavePositions(positions_path_, now); !s.ok()) {
      uint64_t suppressed = 0;
      if (limiter_.Allow("save", &suppressed)) SEEDANCE_LOG_WARN(ctx_.name, "{}", s.message());
      return;
    }
    saved_ = std::move(now);
  }

  TailOptions options_;
  PluginContext ctx_;
  SourceOutput* output_ = nullptr;
  PositionCheckpoint* checkpoint_ = nullptr;  // set when the pipeline keeps state
  asio::steady_timer timer_;
  asio::posix::stream_descriptor notify_;
  bool scan_pending_ = false;
  bool stopped_ = false;
  bool paused_ = false;
  bool first_start_ = false;  // no positions file: files found now honour read_from
  bool first_scan_done_ = false;
  std::string positions_path_;
  std::map<std::pair<uint64_t, uint64_t>, FilePosition> known_;  // from the last run
  std::map<uint64_t, std::unique_ptr<Tracked>> files_;           // by id
  std::map<std::pair<uint64_t, uint64_t>, uint64_t> by_inode_;
  uint64_t next_file_ = 1;
  std::vector<FilePosition> saved_;
  std::chrono::steady_clock::time_point last_save_{};
  std::mutex ack_mu_;
  uint64_t next_token_ = 1;
  std::map<uint64_t, Line> in_flight_;
  std::vector<Line> acked_;
  util::LogLimiter limiter_;
  // Open files (max_open_files).
  static constexpr uint64_t kFollowLinesLogged = 16;
  static constexpr size_t kQuietLookahead = 32;
  size_t max_open_ = 1;
  std::list<Tracked*> open_lru_;  // the open files, least recently active first
  uint64_t followed_ = 0;
  bool warned_open_limit_ = false;
  observe::Gauge* open_gauge_ = &ctx_.metrics->GetGauge(
      "seedance_tail_files_open", "Files the tail source holds open.", {{"component", ctx_.name}});
  observe::Counter* closed_for_room_ = &ctx_.metrics->GetCounter(
      "seedance_tail_files_closed_total",
      "Files the tail source closed to stay within max_open_files (opened again when they grow).",
      {{"component", ctx_.name}});
};

}  // namespace

namespace {

const Options<TailOptions>& TailSchema() {
  using S = TailOptions;
  static const Options<S> o =
      Options<S>()
          .Add(&S::globs,
               {.name = "path",
                .doc = "a glob or a list of globs; files that appear later are picked up",
                .required = true,
                .validator =
                    [](const ParamValue& v) {
                      for (const std::string& g : std::get<std::vector<std::string>>(v)) {
                        if (g.empty()) return InvalidArgumentError("an empty path");
                      }
                      return Status::Ok();
                    }})
          .Enum(&S::format,
                {.name = "format",
                 .doc = "json (each line is a JSON value; others go to error) or raw",
                 .default_value = "json"},
                {{"json", PayloadFormat::kJson}, {"raw", PayloadFormat::kRaw}})
          .Add(&S::topic, {.name = "topic", .doc = "topic of the events; unset: the file's path"})
          .Size(&S::max_line,
                {.name = "max_line",
                 .doc = "longest line taken; longer ones go to error (their first KiB)",
                 .default_value = "64KiB"})
          .Enum(&S::from_end,
                {.name = "read_from",
                 .doc = "for files already there at the first start: beginning or end (later "
                        "files: from their beginning; after a restart: from the stored position)",
                 .default_value = "end"},
                {{"beginning", false}, {"end", true}})
          .Add(&S::poll_interval,
               {.name = "poll_interval",
                .doc = "how often files are checked (inotify wakes the source sooner where it "
                       "works)",
                .default_value = "1s",
                .validator =
                    [](const ParamValue& v) {
                      if (std::get<std::chrono::nanoseconds>(v).count() > 0) return Status::Ok();
                      return InvalidArgumentError("must be more than 0");
                    }})
          .Add(&S::rotate_wait,
               {.name = "rotate_wait",
                .doc = "a file deleted or renamed out of the globs is still read until it has not "
                       "grown for this long (writers append to the old file until they reopen)",
                .default_value = "5s"})
          .Int(&S::max_open_files,
               {.name = "max_open_files",
                .doc = "files held open at most; beyond it the least recently active are closed "
                       "and opened again (by identity) when they grow; lowered to leave 256 of "
                       "the process's descriptors to the queue and sinks",
                .default_value = "256",
                .validator = IntInRange(1, 1000000)})
          .Add(&S::inotify, {.name = "inotify",
                             .doc = "use inotify to notice changes at once (false: polling only)",
                             .default_value = "true"});
  return o;
}

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
