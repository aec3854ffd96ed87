#include <fmt/format.h>

#include <iostream>

#include "main/commands.h"
#include "plugins/builtin_plugins.h"

namespace seedance::cli {
namespace {

void PrintParams(const std::vector<ParamSpec>& params, const std::string& indent) {
  for (const ParamSpec& p : params) {
    std::string extra;
    if (p.required)
      extra = "required";
    else if (p.default_value)
      extra = "default " + *p.default_value;
    else
      extra = "optional";
    if (!p.allowed.empty()) {
      std::string list;
      for (const auto& a : p.allowed) list += (list.empty() ? "" : "|") + a;
      extra += "; one of " + list;
    }
    std::string type(ParamTypeName(p.type));
    if (p.scalar_alternative)
      type = std::string(ParamTypeName(*p.scalar_alternative)) + " or " + type;
    std::cout << fmt::format("{}{:<20} {:<16} {} ({})\n", indent, p.name, type, p.doc, extra);
    if (!p.fields.empty()) PrintParams(p.fields, indent + "  ");
  }
}

}  // namespace

int Describe(const std::string& plugin) {
  PluginRegistry registry;
  RegisterBuiltinPlugins(registry);
  bool found = false;
  for (PluginKind kind : {PluginKind::kSource, PluginKind::kProcessor, PluginKind::kSink}) {
    for (const std::string& type : registry.TypeNames(kind)) {
      const PluginInfo* info = registry.Find(kind, type);
      if (plugin.empty()) {
        std::cout << fmt::format("{:<10} {:<10} {}\n", PluginKindName(kind), type, info->summary);
        continue;
      }
      if (type != plugin) continue;
      found = true;
      std::cout << fmt::format("{} {}: {}\n\n", PluginKindName(kind), type, info->summary);
      if (kind == PluginKind::kSink) {
        std::cout
            << "  inputs               list of strings  outputs consumed: main, error, "
               "rejected, stale (default main)\n"
               "  topics               list of strings  MQTT-style filters (+, #) the event's "
               "topic must match; any when unset\n";
      }
      PrintParams(info->params, "  ");
      std::cout << "\n";
    }
  }
  if (!plugin.empty() && !found) {
    std::cerr << "no plugin named \"" << plugin << "\"; run `seedance describe` for the list\n";
    return kExitConfig;
  }
  return kExitOk;
}

}  // namespace seedance::cli
