#include "seedance/plugin_registry.h"

#include "seedance/delivery_policy.h"

namespace seedance {

std::string_view PluginKindName(PluginKind kind) {
  switch (kind) {
    case PluginKind::kSource:
      return "source";
    case PluginKind::kProcessor:
      return "processor";
    case PluginKind::kSink:
      return "sink";
  }
  return "?";
}

void PluginRegistry::Add(SinkFactory f) {
  const Options<DeliveryPolicy> delivery = DeliverySchema(f.delivery);
  for (const ParamSpec& spec : delivery.Specs()) f.info.params.push_back(spec);
  sinks_[f.info.type] = std::move(f);
}

const PluginInfo* PluginRegistry::Find(PluginKind kind, const std::string& type) const {
  switch (kind) {
    case PluginKind::kSource: {
      auto* f = FindSource(type);
      return f ? &f->info : nullptr;
    }
    case PluginKind::kProcessor: {
      auto* f = FindProcessor(type);
      return f ? &f->info : nullptr;
    }
    case PluginKind::kSink: {
      auto* f = FindSink(type);
      return f ? &f->info : nullptr;
    }
  }
  return nullptr;
}

const SourceFactory* PluginRegistry::FindSource(const std::string& type) const {
  auto it = sources_.find(type);
  return it == sources_.end() ? nullptr : &it->second;
}
const ProcessorFactory* PluginRegistry::FindProcessor(const std::string& type) const {
  auto it = processors_.find(type);
  return it == processors_.end() ? nullptr : &it->second;
}
const SinkFactory* PluginRegistry::FindSink(const std::string& type) const {
  auto it = sinks_.find(type);
  return it == sinks_.end() ? nullptr : &it->second;
}

std::vector<std::string> PluginRegistry::TypeNames(PluginKind kind) const {
  std::vector<std::string> out;
  auto collect = [&out](const auto& m) {
    for (const auto& [name, f] : m) out.push_back(name);
  };
  switch (kind) {
    case PluginKind::kSource:
      collect(sources_);
      break;
    case PluginKind::kProcessor:
      collect(processors_);
      break;
    case PluginKind::kSink:
      collect(sinks_);
      break;
  }
  return out;
}

}  // namespace seedance
