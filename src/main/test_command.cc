// `seedance test`: unit tests for a pipeline's processors (pipetest/).
#include <filesystem>
#include <fstream>
#include <iostream>

#include "main/commands.h"
#include "main/load_config.h"
#include "pipetest/runner.h"
#include "plugins/builtin_plugins.h"
#include "util/log.h"

namespace seedance::cli {

std::string DefaultTestsPath(const std::string& config_path) {
  std::filesystem::path p(config_path);
  return (p.parent_path() / (p.stem().string() + ".tests.yaml")).string();
}

int Test(const TestOptions& options) {
  // What the processors log (a script's print) is not the report: only warnings and worse.
  util::SetLogLevel(util::LogLevel::kWarn);
  PluginRegistry registry;
  RegisterBuiltinPlugins(registry);
  auto config = LoadForRun(
      RunOptions{.config_path = options.config_path, .filter_path = options.filter_path}, registry);
  if (!config) {
    std::cerr << config.error().message() << "\n";
    return kExitConfig;
  }
  const std::string tests_path =
      options.tests_path.empty() ? DefaultTestsPath(options.config_path) : options.tests_path;
  auto tests = pipetest::LoadTests(tests_path);
  if (!tests) {
    std::cerr << tests.error().message() << "\n";
    return kExitConfig;
  }
  auto report = pipetest::RunTests(*config, *tests, registry);
  if (!report) {
    std::cerr << report.error().message() << "\n";
    return kExitConfig;
  }
  for (const pipetest::CaseResult& c : report->cases) {
    if (c.passed) {
      std::cout << "PASS  " << c.name << "\n";
    } else {
      std::cout << "FAIL  " << c.name << "  (" << c.location << ")\n" << c.failure;
    }
  }
  const size_t failed = report->failed();
  std::cout << "\n"
            << report->cases.size() << " test(s): " << report->cases.size() - failed << " passed, "
            << failed << " failed\n";
  if (!options.junit_path.empty()) {
    std::ofstream out(options.junit_path, std::ios::binary | std::ios::trunc);
    out << pipetest::JUnitXml(*report, tests_path);
    if (!out.good()) {
      std::cerr << "cannot write " << options.junit_path << "\n";
      return kExitConfig;
    }
  }
  return failed == 0 ? kExitOk : kExitRuntime;
}

}  // namespace seedance::cli
