#include "pipetest/runner.h"

#include <fmt/format.h>

#include <chrono>

#include "config/component_error.h"
#include "pipetest/chain.h"
#include "pipetest/expect.h"

namespace seedance::pipetest {

size_t Report::failed() const {
  size_t n = 0;
  for (const CaseResult& c : cases) n += c.passed ? 0 : 1;
  return n;
}

Result<Report> RunTests(const config::PipelineConfig& config, const std::vector<TestCase>& tests,
                        const PluginRegistry& registry) {
  Report report;
  for (const TestCase& test : tests) {
    const auto started = std::chrono::steady_clock::now();
    auto chain = Chain::Build(config, test.processors, registry, test.clock_ns);
    if (!chain) {
      return config::ComponentError(chain.error(), test.location, "test", test.name);
    }
    Chain& c = **chain;
    for (const Step& step : test.steps) {
      switch (step.kind) {
        case Step::Kind::kEvent: {
          Event e;
          e.source = "test";
          e.topic = step.topic;
          e.event_time_ns = step.time_ns.value_or(c.now_ns());
          e.payload = step.payload;
          e.format = step.format;
          e.headers = step.headers;
          c.Feed(std::move(e));
          break;
        }
        case Step::Kind::kAdvance:
          c.Advance(step.ns);
          break;
        case Step::Kind::kWatermark:
          c.Watermark(step.ns);
          break;
      }
    }
    CaseResult r;
    r.name = test.name;
    r.location = test.location;
    r.failure = Diff(test.expect, c.emitted());
    r.passed = r.failure.empty();
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    report.cases.push_back(std::move(r));
  }
  return report;
}

namespace {
std::string Xml(std::string_view text) {
  std::string out;
  for (char ch : text) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        // XML 1.0 allows no control characters but tab, newline and carriage return.
        if (static_cast<unsigned char>(ch) < 0x20 && ch != '\t' && ch != '\n' && ch != '\r') {
          out += '?';
        } else {
          out += ch;
        }
    }
  }
  return out;
}
}  // namespace

std::string JUnitXml(const Report& report, const std::string& suite) {
  double total = 0;
  for (const CaseResult& c : report.cases) total += c.seconds;
  std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  xml += fmt::format(
      "<testsuites>\n  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" "
      "time=\"{:.6f}\">\n",
      Xml(suite), report.cases.size(), report.failed(), total);
  for (const CaseResult& c : report.cases) {
    xml += fmt::format("    <testcase name=\"{}\" classname=\"{}\" time=\"{:.6f}\"", Xml(c.name),
                       Xml(suite), c.seconds);
    if (c.passed) {
      xml += "/>\n";
    } else {
      xml += fmt::format(">\n      <failure message=\"{}\">{}</failure>\n    </testcase>\n",
                         Xml(c.location), Xml(c.failure));
    }
  }
  xml += "  </testsuite>\n</testsuites>\n";
  return xml;
}

}  // namespace seedance::pipetest
