#include "observe/prometheus_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "util/strings.h"

namespace seedance::observe {
namespace {

bool IsNameChar(char c, bool first, bool colon) {
  return c == '_' || (colon && c == ':') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (!first && c >= '0' && c <= '9');
}

bool ParseDouble(std::string_view s, double* out) {
  if (s == "+Inf" || s == "Inf") {
    *out = INFINITY;
    return true;
  }
  if (s == "-Inf") {
    *out = -INFINITY;
    return true;
  }
  if (s == "NaN") {
    *out = NAN;
    return true;
  }
  if (!s.empty() && s[0] == '+') {
    s.remove_prefix(1);
    if (!s.empty() && (s[0] == '-' || s[0] == '+')) return false;
  }
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size();
}

// The next token (up to a space or a tab) from `line` at `*i`, after leading blanks.
std::string_view Token(std::string_view line, size_t* i) {
  while (*i < line.size() && (line[*i] == ' ' || line[*i] == '\t')) ++*i;
  const size_t start = *i;
  while (*i < line.size() && line[*i] != ' ' && line[*i] != '\t') ++*i;
  return line.substr(start, *i - start);
}

// Parses one sample line into `s`; returns what is wrong, or "".
std::string ParseLine(std::string_view line, ExpositionFormat format, const ParseLimits& limits,
                      Sample* s) {
  size_t i = 0;
  while (i < line.size() && IsNameChar(line[i], i == 0, true)) ++i;
  if (i == 0) return "no metric name";
  s->name.assign(line.substr(0, i));
  if (i < line.size() && line[i] == '{') {
    ++i;
    while (true) {
      while (i < line.size() && (line[i] == ' ' || line[i] == ',')) ++i;
      if (i >= line.size()) return "unclosed label set";
      if (line[i] == '}') {
        ++i;
        break;
      }
      const size_t start = i;
      while (i < line.size() && IsNameChar(line[i], i == start, false)) ++i;
      if (i == start) return "a label name is missing or malformed";
      if (i + 1 >= line.size() || line[i] != '=' || line[i + 1] != '"') {
        return "a label needs =\"value\"";
      }
      if (s->labels.size() >= limits.max_labels) {
        return fmt::format("more than {} labels", limits.max_labels);
      }
      std::string key(line.substr(start, i - start));
      i += 2;
      std::string value;
      while (i < line.size() && line[i] != '"') {
        if (line[i] == '\\') {
          if (i + 1 >= line.size()) return "an escape at the end of the line";
          ++i;
          if (line[i] == 'n') {
            value += '\n';
          } else if (line[i] == '\\' || line[i] == '"') {
            value += line[i];
          } else {
            return "an unknown escape in a label value";
          }
        } else {
          value += line[i];
        }
        ++i;
      }
      if (i >= line.size()) return "an unclosed label value";
      ++i;  // closing quote
      s->labels.emplace_back(std::move(key), std::move(value));
    }
  }
  if (i >= line.size() || (line[i] != ' ' && line[i] != '\t')) return "no value after the name";
  if (!ParseDouble(Token(line, &i), &s->value)) return "the value is not a number";
  std::string_view timestamp = Token(line, &i);
  if (format == ExpositionFormat::kOpenMetrics && timestamp == "#") {
    return "";  // an exemplar follows: skipped
  }
  if (!timestamp.empty()) {
    if (format == ExpositionFormat::kText) {
      int64_t ms = 0;
      const auto [end, ec] =
          std::from_chars(timestamp.data(), timestamp.data() + timestamp.size(), ms);
      if (ec != std::errc() || end != timestamp.data() + timestamp.size()) {
        return "the timestamp is not an integer of milliseconds";
      }
      s->timestamp_ms = ms;
    } else {
      double seconds = 0;
      if (!ParseDouble(timestamp, &seconds) || !std::isfinite(seconds) ||
          std::fabs(seconds) > 9.2e15) {
        return "the timestamp is not a number of seconds";
      }
      s->timestamp_ms = std::llround(seconds * 1000);
    }
  }
  std::string_view rest = Token(line, &i);
  if (rest.empty()) return "";
  if (format == ExpositionFormat::kOpenMetrics && rest == "#") return "";  // exemplar
  return "unexpected text after the value";
}

}  // namespace

std::string Sample::Label(std::string_view key) const {
  for (const auto& [k, v] : labels) {
    if (k == key) return v;
  }
  return "";
}

ExpositionFormat FormatOfContentType(std::string_view content_type) {
  std::string_view media = content_type.substr(0, content_type.find(';'));
  while (!media.empty() && (media.front() == ' ' || media.front() == '\t')) media.remove_prefix(1);
  while (!media.empty() && (media.back() == ' ' || media.back() == '\t')) media.remove_suffix(1);
  constexpr std::string_view kOpenMetrics = "application/openmetrics-text";
  const bool open_metrics =
      media.size() == kOpenMetrics.size() &&
      std::equal(media.begin(), media.end(), kOpenMetrics.begin(),
                 [](char a, char b) { return (a >= 'A' && a <= 'Z' ? a - 'A' + 'a' : a) == b; });
  return open_metrics ? ExpositionFormat::kOpenMetrics : ExpositionFormat::kText;
}

Result<std::vector<Sample>> ParseExposition(std::string_view text, ExpositionFormat format,
                                            const ParseLimits& limits) {
  std::vector<Sample> samples;
  size_t line_no = 0;
  size_t pos = 0;
  bool eof = false;
  auto refuse = [&](std::string_view why, std::string_view line) {
    return Status(
        StatusCode::kInvalidArgument,
        fmt::format("line {}: {}: {}", line_no, why, util::SanitizeText(line.substr(0, 120), 120)));
  };
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (line.size() > limits.max_line_bytes) {
      return refuse(fmt::format("longer than {} bytes", limits.max_line_bytes), line);
    }
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    if (eof) {
      if (!line.empty()) return refuse("text after # EOF", line);
      continue;
    }
    if (line.empty()) continue;
    if (line[0] == '#') {
      if (format == ExpositionFormat::kOpenMetrics && line == "# EOF") eof = true;
      continue;
    }
    if (samples.size() >= limits.max_samples) {
      return refuse(fmt::format("more than {} samples", limits.max_samples), line);
    }
    Sample s;
    if (std::string why = ParseLine(line, format, limits, &s); !why.empty()) {
      return refuse(fmt::format("not a sample ({})", why), line);
    }
    samples.push_back(std::move(s));
  }
  if (format == ExpositionFormat::kOpenMetrics && !eof) {
    return Status(StatusCode::kInvalidArgument,
                  "no # EOF at the end: the OpenMetrics page was cut short");
  }
  return samples;
}

}  // namespace seedance::observe
