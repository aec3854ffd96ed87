// The `seedance` subcommands. Each returns the process exit code:
//   0 success, 1 runtime failure, 2 bad configuration or usage.
#pragma once

#include <string>

namespace seedance::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitRuntime = 1;
inline constexpr int kExitConfig = 2;

struct RunOptions {
  std::string config_path;
  std::string filter_path;  // --filter: a Lua processor in front of the configured ones
  std::string log_level;    // overrides log.level when set
};

int Run(const RunOptions& options);
int Validate(const RunOptions& options);
int Describe(const std::string& plugin);

}  // namespace seedance::cli
