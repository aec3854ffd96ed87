// Reading the Prometheus exposition formats: the samples of a /metrics page. The one parser of
// the tree (slo-check, `seedance top`, and the scrape source of issue 47 build on it).
//
// - Text format 0.0.4 (`text/plain; version=0.0.4`): `name{label="value",...} value [ms]`.
// - OpenMetrics 1.0 text (`application/openmetrics-text`): the same sample lines, timestamps
//   in seconds (fractions allowed), an exemplar after ` # ` (skipped), and `# EOF` as the last
//   line (anything after it is refused; a missing one is refused too: the page was cut).
// Comments, HELP, TYPE and UNIT lines are skipped. Label values take the escapes `\\`, `\"`
// and `\n`. Values: floats, `+Inf`, `-Inf`, `NaN`.
//
// Bounded: a page with more than `max_samples` samples, a line longer than `max_line_bytes`,
// or a sample with more than `max_labels` labels is refused with the line number, so an
// untrusted target cannot make a scrape cost more than its limits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "seedance/result.h"

namespace seedance::observe {

struct Sample {
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;
  double value = 0;
  std::optional<int64_t> timestamp_ms;  // when the page gave one
  // The value of label `key`, or "" when absent.
  std::string Label(std::string_view key) const;
};

enum class ExpositionFormat { kText, kOpenMetrics };

// The format a Content-Type names: OpenMetrics for application/openmetrics-text, else text.
ExpositionFormat FormatOfContentType(std::string_view content_type);

struct ParseLimits {
  size_t max_samples = 1 << 20;
  size_t max_line_bytes = 64 << 10;
  size_t max_labels = 64;
};

// kInvalidArgument naming the line number of the first malformed line, or the limit passed.
Result<std::vector<Sample>> ParseExposition(std::string_view text,
                                            ExpositionFormat format = ExpositionFormat::kText,
                                            const ParseLimits& limits = {});

// The text format (0.0.4), as before.
inline Result<std::vector<Sample>> ParsePrometheusText(std::string_view text) {
  return ParseExposition(text, ExpositionFormat::kText);
}

}  // namespace seedance::observe
