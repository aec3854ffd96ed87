// PluginRegistry: the one table of source, processor and sink types, by type name.
//
// Filled once at start by RegisterBuiltinPlugins() (one explicit list, no static
// constructors, which break under static linking). Read-only afterwards; thread-compatible.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "seedance/param_spec.h"
#include "seedance/processor.h"
#include "seedance/result.h"
#include "seedance/sink.h"
#include "seedance/source.h"

namespace seedance {

// seedance/plugin_context.h: the event loop, metrics, clock and the component's name, handed
// to Create().
struct PluginContext;

enum class PluginKind { kSource, kProcessor, kSink };
std::string_view PluginKindName(PluginKind kind);

struct PluginInfo {
  std::string type;  // e.g. "mqtt"
  PluginKind kind = PluginKind::kSource;
  std::string summary;  // one line
  std::vector<ParamSpec> params;
  // It reads what the process has once (standard input): a second one in a configuration is
  // refused, naming both.
  bool one_per_pipeline = false;
};

struct SourceFactory {
  PluginInfo info;
  std::function<Result<std::unique_ptr<Source>>(const Params&, PluginContext&)> create;
};
// The parameter (a list of strings) by which a processor declares the named outputs it may
// send events to; sinks consume them with `inputs:`.
inline constexpr char kNamedOutputsParam[] = "outputs";

// The named outputs a processor's checked parameters declare (none when it has none).
inline std::vector<std::string> NamedOutputs(const Params& params) {
  const ParamValue* v = params.Find(kNamedOutputsParam);
  const auto* names = v == nullptr ? nullptr : std::get_if<std::vector<std::string>>(v);
  return names == nullptr ? std::vector<std::string>{} : *names;
}

struct ProcessorFactory {
  PluginInfo info;
  std::function<Result<std::unique_ptr<Processor>>(const Params&, PluginContext&)> create;
};
// Which of the runner's delivery settings a sink type offers, and their defaults. The settings
// themselves (batch_size, concurrency, timeout, retry_*) are declared once for every sink, in
// seedance/delivery_policy.h, and appended to the sink's parameters by the registry.
struct SinkDeliveryTraits {
  std::string batch_size = "500";
  // How long a batch smaller than batch_size waits for more (`batch_linger`).
  std::string batch_linger = "0s";
  // Offers `concurrency` (fixed, or adaptive to latency); otherwise one attempt at a time.
  bool concurrent = false;
  std::string concurrency = "4";
  // Offers `timeout` per attempt (sinks that wait on a remote side).
  bool timeout = false;
  std::string default_timeout = "5s";
};

struct SinkFactory {
  PluginInfo info;
  SinkDeliveryTraits delivery;
  std::function<Result<std::unique_ptr<Sink>>(const Params&, PluginContext&)> create;
};

class PluginRegistry {
 public:
  void Add(SourceFactory f) { sources_[f.info.type] = std::move(f); }
  void Add(ProcessorFactory f) { processors_[f.info.type] = std::move(f); }
  // Appends the delivery settings the sink offers (f.delivery) to its parameters.
  void Add(SinkFactory f);

  // nullptr when no plugin of that kind has that type name.
  const PluginInfo* Find(PluginKind kind, const std::string& type) const;
  const SourceFactory* FindSource(const std::string& type) const;
  const ProcessorFactory* FindProcessor(const std::string& type) const;
  const SinkFactory* FindSink(const std::string& type) const;
  // Type names of one kind, sorted.
  std::vector<std::string> TypeNames(PluginKind kind) const;

 private:
  std::map<std::string, SourceFactory> sources_;
  std::map<std::string, ProcessorFactory> processors_;
  std::map<std::string, SinkFactory> sinks_;
};

}  // namespace seedance
