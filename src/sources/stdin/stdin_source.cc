#include "sources/stdin/stdin_source.h"

#include <poll.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "observe/component_stats.h"
#include "seedance/options.h"
#include "seedance/plugin_context.h"
#include "sources/tail/line_splitter.h"
#include "util/event_loop.h"
#include "util/json_check.h"
#include "util/log.h"
#include "util/thread_name.h"

namespace seedance::sources {
namespace {

constexpr size_t kChunk = 64 * 1024;
constexpr int kPollMs = 100;  // how soon the reader sees a stop while the writer is silent

struct StdinSettings {
  PayloadFormat format = PayloadFormat::kJson;
  std::string topic;
  uint64_t max_line = 64 << 10;
};

const Options<StdinSettings>& StdinSchema() {
  using S = StdinSettings;
  static const Options<S> o =
      Options<S>()
          .Enum(&S::format,
                {.name = "format",
                 .doc = "json (each line is a JSON value; others go to error) or raw",
                 .default_value = "json"},
                {{"json", PayloadFormat::kJson}, {"raw", PayloadFormat::kRaw}})
          .Add(&S::topic, {.name = "topic", .doc = "topic of the events", .default_value = "stdin"})
          .Size(&S::max_line,
                {.name = "max_line",
                 .doc = "longest line taken; longer ones go to error (their first KiB)",
                 .default_value = "64KiB"});
  return o;
}

// What the reader thread hands the event loop, one chunk at a time: shared, so that a post
// that runs after the source stopped finds it still there.
struct Handoff {
  std::mutex mu;
  std::condition_variable taken;  // the loop took every line of the chunk, or a stop
  std::string chunk;
  bool full = false;   // `chunk` (or the end) waits for the loop, or is being emitted
  bool ended = false;  // after `chunk` the input ended
  std::string error;   // why, when it was not the end of file
  bool stopped = false;
};

class StdinSource final : public Source {
 public:
  StdinSource(StdinSettings settings, PluginContext ctx)
      : settings_(std::move(settings)),
        ctx_(std::move(ctx)),
        lines_(settings_.max_line),
        handoff_(std::make_shared<Handoff>()) {}
  ~StdinSource() override { Stop(); }

  Status Start(SourceOutput& output) override {
    output_ = &output;
    reader_ = std::thread([this, h = handoff_] { ReadLoop(*h); });
    return Status::Ok();
  }

  void Stop() override {
    {
      std::lock_guard<std::mutex> lock(handoff_->mu);
      handoff_->stopped = true;
    }
    handoff_->taken.notify_all();
    if (reader_.joinable()) reader_.join();  // within kPollMs: it never blocks in read()
    stopped_ = true;
  }

 private:
  // The reader thread: waits until the loop took the last chunk, then for input, and hands
  // on the next chunk (or the end).
  void ReadLoop(Handoff& h) {
    util::NameThisThread("sd-stdin");
    std::string buf(kChunk, '\0');
    while (true) {
      {
        std::unique_lock<std::mutex> lock(h.mu);
        h.taken.wait(lock, [&] { return h.stopped || !h.full; });
        if (h.stopped) return;
      }
      pollfd p{STDIN_FILENO, POLLIN, 0};
      const int ready = ::poll(&p, 1, kPollMs);
      if (ready == 0 || (ready < 0 && errno == EINTR)) {
        std::lock_guard<std::mutex> lock(h.mu);
        if (h.stopped) return;
        continue;
      }
      ssize_t n = -1;
      int err = 0;
      if (ready < 0) {
        err = errno;
      } else if ((p.revents & POLLNVAL) != 0) {
        err = EBADF;  // no standard input at all (closed: `seedance run ... <&-`)
      } else {
        n = ::read(STDIN_FILENO, buf.data(), buf.size());
        if (n < 0) err = errno;
        if (n < 0 && (err == EINTR || err == EAGAIN)) continue;
      }
      {
        std::lock_guard<std::mutex> lock(h.mu);
        if (h.stopped) return;
        h.full = true;
        if (n > 0) {
          h.chunk.assign(buf.data(), static_cast<size_t>(n));
        } else {
          h.ended = true;
          if (n < 0) h.error = std::strerror(err);
        }
      }
      ctx_.loop->Post([this, hp = handoff_] {
        {
          std::lock_guard<std::mutex> lock(hp->mu);
          if (hp->stopped) return;
        }
        Take();
      });
      if (n <= 0) return;
    }
  }

  // On the loop: the chunk (or the end) the reader handed on.
  void Take() {
    std::string chunk;
    {
      std::lock_guard<std::mutex> lock(handoff_->mu);
      chunk.swap(handoff_->chunk);
      if (handoff_->ended) {
        ended_ = true;
        end_error_ = handoff_->error;
      }
    }
    if (!chunk.empty()) {
      lines_.Append(chunk.data(), chunk.size());
      last_byte_ = chunk.back();
      bytes_ += chunk.size();
    }
    if (ended_ && bytes_ > 0 && last_byte_ != '\n') {
      lines_.Append("\n", 1);  // the last line, without its newline, is a line
      last_byte_ = '\n';
    }
    Emit();
  }

  // On the loop: hands on every complete line; then lets the reader read again, or, at the
  // end, says the input ended.
  void Emit() {
    if (stopped_) return;
    while (auto piece = lines_.Peek()) {
      if (piece->kind != LinePiece::Kind::kDone && !EmitPiece(*piece)) {
        lines_.Compact();
        output_->WhenWritable([this] { Emit(); });
        return;
      }
      lines_.Take();
    }
    lines_.Compact();
    if (ended_) {
      if (!end_error_.empty()) {
        SEEDANCE_LOG_WARN(ctx_.name, "standard input cannot be read: {}; it is taken as ended",
                          end_error_);
      }
      SEEDANCE_LOG_INFO(ctx_.name, "standard input ended after {} line(s), {} byte(s)", lines_read_,
                        bytes_);
      output_->InputEnded(ctx_.name);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(handoff_->mu);
      handoff_->full = false;
    }
    handoff_->taken.notify_one();
  }

  // False when the pipeline has no room (the piece is offered again).
  bool EmitPiece(const LinePiece& piece) {
    Event e = output_->TakeEvent();
    e.source.assign(ctx_.name);
    e.topic.assign(settings_.topic);
    e.payload.assign(piece.text.data(), piece.text.size());
    e.format = settings_.format;
    e.ingest_time_ns = e.event_time_ns = ctx_.now_ns();
    std::string reason;
    if (piece.kind == LinePiece::Kind::kTooLong) {
      reason = fmt::format(
          "line {} of standard input is longer than max_line ({} bytes); its "
          "first KiB kept",
          piece.line_no, settings_.max_line);
    } else if (settings_.format == PayloadFormat::kJson) {
      if (Status s = CheckJson(piece.text); !s.ok()) {
        reason = fmt::format("line {} of standard input: {}", piece.line_no, s.message());
      }
    }
    if (!reason.empty()) {
      e.format = PayloadFormat::kRaw;
      e.SetHeader("stdin_line", std::to_string(piece.line_no));
      if (!output_->TryEmitInvalid(e, AckHandle{}, reason)) return false;
      ctx_.stats->errors.Add();
    } else {
      if (!output_->TryEmit(e, AckHandle{})) return false;
      ctx_.stats->events_in.Add();
      ctx_.stats->events_out.Add();
    }
    ++lines_read_;
    return true;
  }

  const StdinSettings settings_;
  PluginContext ctx_;
  SourceOutput* output_ = nullptr;
  LineSplitter lines_;  // the loop's
  std::shared_ptr<Handoff> handoff_;
  std::thread reader_;
  bool stopped_ = false;  // the loop's
  bool ended_ = false;    // the loop's: the reader handed on the end
  std::string end_error_;
  char last_byte_ = '\n';
  uint64_t bytes_ = 0;
  uint64_t lines_read_ = 0;
};

}  // namespace

SourceFactory StdinSourceFactory() {
  SourceFactory f;
  f.info.type = "stdin";
  f.info.kind = PluginKind::kSource;
  f.info.summary =
      "Lines of standard input (NDJSON or raw); when it ends, the process stops once every "
      "source has ended.";
  f.info.params = StdinSchema().Specs();
  f.info.one_per_pipeline = true;
  f.create = [](const Params& p, PluginContext& ctx) -> Result<std::unique_ptr<Source>> {
    SEEDANCE_ASSIGN_OR_RETURN(StdinSettings s, StdinSchema().Bind(p));
    return std::unique_ptr<Source>(new StdinSource(std::move(s), ctx));
  };
  return f;
}

}  // namespace seedance::sources
