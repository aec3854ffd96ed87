// seedance: the command line. Kept thin: parsing here, work in commands.
#include <CLI/CLI.hpp>

#include <iostream>

#include "main/commands.h"

int main(int argc, char** argv) {
  using namespace seedance::cli;
  CLI::App app{
      "Seedance: an edge dataflow runtime (MQTT → Lua → HTTP), in one small binary.\n"
      "Exit codes: 0 ok, 1 runtime failure, 2 bad configuration or usage."};
  app.set_version_flag("--version", "seedance " SEEDANCE_VERSION);
  RunOptions top;
  app.add_option("-c,--config", top.config_path, "pipeline configuration (YAML)");
  app.add_option("-f,--filter", top.filter_path,
                 "Lua filter run in front of the configured processors");
  app.add_option("--log-level", top.log_level, "debug, info, warn, error or off");

  RunOptions run_opts;
  CLI::App* run = app.add_subcommand("run", "run a pipeline until SIGINT or SIGTERM");
  run->add_option("-c,--config", run_opts.config_path, "pipeline configuration (YAML)")->required();
  run->add_option("-f,--filter", run_opts.filter_path,
                  "Lua filter run in front of the configured processors");
  run->add_option("--log-level", run_opts.log_level, "debug, info, warn, error or off");

  RunOptions validate_opts;
  CLI::App* validate = app.add_subcommand(
      "validate", "check a configuration (and filter scripts) without connecting to anything");
  validate->add_option("-c,--config,config", validate_opts.config_path, "pipeline configuration")
      ->required();
  validate->add_option("-f,--filter", validate_opts.filter_path, "Lua filter to check as well");

  std::string plugin;
  CLI::App* describe =
      app.add_subcommand("describe", "list plugins, or show one plugin's parameters");
  describe->add_option("plugin", plugin, "plugin type, e.g. mqtt or http");

  CLI::App* version = app.add_subcommand("version", "print the version");

  try {
    app.require_subcommand(0, 1);
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? kExitOk : kExitConfig;
  }
  if (*version) {
    std::cout << "seedance " SEEDANCE_VERSION << "\n";
    return kExitOk;
  }
  if (*validate) return Validate(validate_opts);
  if (*describe) return Describe(plugin);
  if (*run) return Run(run_opts);
  if (top.config_path.empty()) {
    std::cerr << app.help() << "\nerror: --config is required (or use a subcommand)\n";
    return kExitConfig;
  }
  return Run(top);
}
