#include "sinks/stdout/stdout_sink.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "seedance/options.h"
#include "seedance/plugin_context.h"
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
    if (out_.capacity() > MemoryAccount::kPooledBufferBytes) out_ = std::string();
    done(AttemptOutcome::Delivered());
  }

 private:
  EventEncoding encoding_;
  const int fd_ = STDOUT_FILENO;
  std::string out_;  // kept for the next batch while small
};

}  // namespace

namespace {

struct StdoutSinkSettings {
  EventEncoding encoding = EventEncoding::kEnvelope;
};

const Options<StdoutSinkSettings>& StdoutSinkSchema() {
  static const Options<StdoutSinkSettings> o = Options<StdoutSinkSettings>().Enum(
      &StdoutSinkSettings::encoding,
      {.name = "encoding",
       .doc = "payload alone, or an envelope with id, topic, time, payload and headers",
       .default_value = "envelope"},
      EventEncodingChoices());
  return o;
}

}  // namespace

SinkFactory StdoutSinkFactory() {
  SinkFactory f;
  f.info.type = "stdout";
  f.info.kind = PluginKind::kSink;
  f.info.summary = "Writes events to standard output, one JSON line each.";
  f.info.params = StdoutSinkSchema().Specs();
  f.create = [](const Params& p, PluginContext&) -> Result<std::unique_ptr<Sink>> {
    SEEDANCE_ASSIGN_OR_RETURN(StdoutSinkSettings s, StdoutSinkSchema().Bind(p));
    return std::unique_ptr<Sink>(new StdoutSink(s.encoding));
  };
  return f;
}

}  // namespace seedance::sinks
