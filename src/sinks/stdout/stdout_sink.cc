#include "sinks/stdout/stdout_sink.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/plugin_context.h"
#include "governor/memory_budget.h"
#include "sinks/common/event_encoding.h"
#include "util/fd_io.h"

namespace seedance::sinks {
namespace {

class StdoutSink final : public Sink {
 public:
  explicit StdoutSink(EventEncoding encoding) : encoding_(encoding) {}
  // A failed write (a full pipe's reader gone, a full disk behind a redirect) is retried by
  // the runner; lines of the failed attempt that were written are written again.
  void Attempt(uint64_t /*id*/, const Batch& batch, AttemptCallback done) override {
    out_.clear();
    AppendBatch(batch.events, encoding_, BatchFormat::kNdjson, out_);
    if (int err = util::WriteAll(fd_, out_); err != 0) {
      return done(AttemptOutcome::Retry(std::string("writing to stdout: ") + std::strerror(err)));
    }
    if (out_.capacity() > governor::MemoryBudget::kPooledBufferBytes) out_ = std::string();
    done(AttemptOutcome::Delivered());
  }

 private:
  EventEncoding encoding_;
  const int fd_ = STDOUT_FILENO;
  std::string out_;  // kept for the next batch while small
};

}  // namespace

SinkFactory StdoutSinkFactory() {
  SinkFactory f;
  f.info.type = "stdout";
  f.info.kind = PluginKind::kSink;
  f.info.summary = "Writes events to standard output, one JSON line each.";
  f.info.params = {
      {.name = "encoding",
       .type = ParamType::kString,
       .doc = "payload alone, or an envelope with id, topic, time, payload and headers",
       .default_value = "envelope",
       .allowed = {"payload", "envelope"}},
  };
  f.create = [](const Params& p, PluginContext&) -> Result<std::unique_ptr<Sink>> {
    return std::unique_ptr<Sink>(new StdoutSink(ParseEventEncoding(p.GetString("encoding"))));
  };
  return f;
}

}  // namespace seedance::sinks
