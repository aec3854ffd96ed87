// `seedance version`: what this binary is — version, the commit it was built from, build type,
// target architecture and the plugins compiled in.
#include <fmt/format.h>

#include <iostream>

#include "main/commands.h"
#include "plugins/builtin_plugins.h"
#include "seedance/plugin_registry.h"

namespace seedance::cli {
namespace {

const char* TargetArchitecture() {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "aarch64";
#elif defined(__arm__)
  return "arm";
#elif defined(__riscv)
  return "riscv";
#else
  return "unknown";
#endif
}

}  // namespace

int Version(const std::string& commit) {
  PluginRegistry registry;
  RegisterBuiltinPlugins(registry);
  std::cout << "seedance " SEEDANCE_VERSION "\n";
  std::cout << "commit: " << commit << "\n";
  std::cout << "build: " SEEDANCE_BUILD_TYPE "\n";
  std::cout << "target: " << TargetArchitecture() << "-linux\n";
  for (PluginKind kind : {PluginKind::kSource, PluginKind::kProcessor, PluginKind::kSink}) {
    std::cout << fmt::format("{}s: {}\n", PluginKindName(kind),
                             fmt::join(registry.TypeNames(kind), ", "));
  }
  return kExitOk;
}

}  // namespace seedance::cli
