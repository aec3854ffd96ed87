// Parsing the Prometheus text exposition format (0.0.4): the samples of a /metrics page.
// Comments, HELP and TYPE lines are skipped; timestamps are ignored.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "seedance/result.h"

namespace seedance::slo {

struct Sample {
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;
  double value = 0;
  // The value of label `key`, or "" when absent.
  std::string Label(std::string_view key) const;
};

// kInvalidArgument naming the line number of the first malformed line.
Result<std::vector<Sample>> ParsePrometheusText(std::string_view text);

}  // namespace seedance::slo
