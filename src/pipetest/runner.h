// Runs the tests of a tests file against a pipeline config: each test on a fresh chain of the
// processors it names (no state carries from one test to the next), its steps in order, then
// what came out compared with what it expects.
#pragma once

#include <string>
#include <vector>

#include "config/config.h"
#include "pipetest/test_spec.h"
#include "seedance/plugin_registry.h"

namespace seedance::pipetest {

struct CaseResult {
  std::string name;
  std::string location;
  bool passed = false;
  std::string failure;  // the diff, when it failed
  double seconds = 0;
};

struct Report {
  std::vector<CaseResult> cases;
  size_t failed() const;
};

// kInvalidArgument when a test cannot run at all (a processor name the config lacks, one that
// cannot be made): that is the tests file's or the config's fault, not a failed test.
Result<Report> RunTests(const config::PipelineConfig& config, const std::vector<TestCase>& tests,
                        const PluginRegistry& registry);

// The report as JUnit XML (one testsuite named `suite`), for CI systems.
std::string JUnitXml(const Report& report, const std::string& suite);

}  // namespace seedance::pipetest
