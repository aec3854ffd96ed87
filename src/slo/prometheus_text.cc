#include "slo/prometheus_text.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>

namespace seedance::slo {
namespace {

bool IsNameChar(char c, bool first) {
  return c == '_' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (!first && c >= '0' && c <= '9');
}

// Parses one sample line; false when malformed.
bool ParseLine(std::string_view line, Sample* s) {
  size_t i = 0;
  while (i < line.size() && IsNameChar(line[i], i == 0)) ++i;
  if (i == 0) return false;
  s->name = std::string(line.substr(0, i));
  if (i < line.size() && line[i] == '{') {
    ++i;
    while (true) {
      while (i < line.size() && (line[i] == ' ' || line[i] == ',')) ++i;
      if (i < line.size() && line[i] == '}') {
        ++i;
        break;
      }
      size_t start = i;
      while (i < line.size() && IsNameChar(line[i], i == start)) ++i;
      if (i == start || i + 1 >= line.size() || line[i] != '=' || line[i + 1] != '"') return false;
      std::string key(line.substr(start, i - start));
      i += 2;
      std::string value;
      while (i < line.size() && line[i] != '"') {
        if (line[i] == '\\' && i + 1 < line.size()) {
          ++i;
          value += line[i] == 'n' ? '\n' : line[i];
        } else {
          value += line[i];
        }
        ++i;
      }
      if (i >= line.size()) return false;
      ++i;  // closing quote
      s->labels.emplace_back(std::move(key), std::move(value));
    }
  }
  while (i < line.size() && line[i] == ' ') ++i;
  std::string number(line.substr(i, line.find(' ', i) - i));
  if (number.empty()) return false;
  if (number == "+Inf") {
    s->value = INFINITY;
  } else if (number == "-Inf") {
    s->value = -INFINITY;
  } else if (number == "NaN") {
    s->value = NAN;
  } else {
    char* end = nullptr;
    s->value = std::strtod(number.c_str(), &end);
    if (end != number.c_str() + number.size()) return false;
  }
  return true;
}

}  // namespace

std::string Sample::Label(std::string_view key) const {
  for (const auto& [k, v] : labels) {
    if (k == key) return v;
  }
  return "";
}

Result<std::vector<Sample>> ParsePrometheusText(std::string_view text) {
  std::vector<Sample> samples;
  size_t line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    if (line.empty() || line[0] == '#') continue;
    Sample s;
    if (!ParseLine(line, &s)) {
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("line {}: not a Prometheus sample: {}", line_no,
                                std::string(line.substr(0, 120))));
    }
    samples.push_back(std::move(s));
  }
  return samples;
}

}  // namespace seedance::slo
