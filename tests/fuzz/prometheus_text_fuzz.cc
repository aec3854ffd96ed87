// Fuzz target for the exposition parser (observe/prometheus_text.h): any bytes, both formats.
// Whatever is accepted must be within the limits, and written back as text must parse again
// to the same samples (names, labels, values, timestamps).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "fuzz/fuzz_target.h"
#include "observe/prometheus_text.h"

namespace {

using seedance::observe::ExpositionFormat;
using seedance::observe::Sample;

std::string Write(const std::vector<Sample>& samples) {
  std::string out;
  char number[64];
  for (const Sample& s : samples) {
    out += s.name;
    out += '{';
    for (const auto& [k, v] : s.labels) {
      out += k + "=\"";
      for (char c : v) {
        if (c == '\\' || c == '"') out += '\\';
        if (c == '\n') {
          out += "\\n";
          continue;
        }
        out += c;
      }
      out += "\",";
    }
    out += "} ";
    if (std::isnan(s.value)) {
      out += "NaN";
    } else if (std::isinf(s.value)) {
      out += s.value > 0 ? "+Inf" : "-Inf";
    } else {
      std::snprintf(number, sizeof number, "%.17g", s.value);
      out += number;
    }
    if (s.timestamp_ms) out += " " + std::to_string(*s.timestamp_ms);
    out += '\n';
  }
  return out;
}

bool Same(const Sample& a, const Sample& b) {
  const bool values = (std::isnan(a.value) && std::isnan(b.value)) || a.value == b.value;
  return a.name == b.name && a.labels == b.labels && values && a.timestamp_ms == b.timestamp_ms;
}

}  // namespace

SEEDANCE_FUZZ_TARGET(prometheus_text) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const seedance::observe::ParseLimits limits{
      .max_samples = 64, .max_line_bytes = 512, .max_labels = 8};
  for (ExpositionFormat format : {ExpositionFormat::kText, ExpositionFormat::kOpenMetrics}) {
    auto parsed = seedance::observe::ParseExposition(text, format, limits);
    if (!parsed) continue;
    if (parsed->size() > limits.max_samples) {
      seedance::fuzz::Fail("prometheus_text", "more samples than the limit", text);
    }
    for (const Sample& s : *parsed) {
      if (s.labels.size() > limits.max_labels) {
        seedance::fuzz::Fail("prometheus_text", "more labels than the limit", text);
      }
    }
    const std::string again = Write(*parsed);
    auto reparsed = seedance::observe::ParseExposition(again, ExpositionFormat::kText);
    if (!reparsed) seedance::fuzz::Fail("prometheus_text", "the written page is refused", text);
    if (reparsed->size() != parsed->size()) {
      seedance::fuzz::Fail("prometheus_text", "the written page has other samples", text);
    }
    for (size_t i = 0; i < parsed->size(); ++i) {
      if (!Same((*parsed)[i], (*reparsed)[i])) {
        seedance::fuzz::Fail("prometheus_text", "a sample changed when written", text);
      }
    }
  }
  return 0;
}
