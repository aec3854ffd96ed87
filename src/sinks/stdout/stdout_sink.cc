#include "sinks/stdout/stdout_sink.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/plugin_context.h"
#include "sinks/common/event_encoding.h"
#include "util/fd_io.h"

namespace seedance::sinks {
namespace {

class StdoutSink final : public Sink {
 public:
  explicit StdoutSink(EventEncoding encoding) : encoding_(encoding) {}
  void Deliver(std::shared_ptr<const Batch> batch, DeliveryCallback done) override {
    std::string out;
    AppendBatch(batch->events, encoding_, BatchFormat::kNdjson, out);
    if (int err = util::WriteAll(STDOUT_FILENO, out); err != 0) {
      done(InvalidArgumentError(std::string("writing to stdout: ") + std::strerror(err)));
      return;
    }
    done(Status::Ok());
  }

 private:
  EventEncoding encoding_;
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
