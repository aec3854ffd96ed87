#include "sinks/influxdb/write_error.h"

#include <rapidjson/document.h>

#include <charconv>

#include "util/strings.h"

namespace seedance::sinks {
namespace {

constexpr std::string_view kUnableToParse = "unable to parse '";

// The server's message: the "error" (v1) or "message" (v2) member of a JSON object.
std::string ErrorText(std::string_view body) {
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseIterativeFlag>(body.data(), body.size());
  if (!doc.HasParseError() && doc.IsObject()) {
    for (const char* name : {"error", "message"}) {
      auto it = doc.FindMember(name);
      if (it != doc.MemberEnd() && it->value.IsString()) {
        return std::string(it->value.GetString(), it->value.GetStringLength());
      }
    }
  }
  return std::string(body);
}

}  // namespace

InfluxWriteError ParseInfluxWriteError(std::string_view body, size_t max_line_bytes,
                                       const std::function<bool(std::string_view)>& is_line) {
  InfluxWriteError e;
  const std::string decoded = ErrorText(body);
  const std::string_view text = decoded;
  e.message = util::SanitizeText(text, 300);
  if (size_t at = text.rfind("dropped="); at != std::string_view::npos) {
    uint64_t n = 0;
    const char* begin = text.data() + at + 8;
    auto [end, ec] = std::from_chars(begin, text.data() + text.size(), n);
    if (ec == std::errc() && end != begin) e.dropped = n;
  }
  size_t budget = kInfluxParseBudgetBytes;  // candidate bytes tried, over every quote
  size_t at = 0;
  while ((at = text.find(kUnableToParse, at)) != std::string_view::npos) {
    ++e.mentions;
    const size_t line_start = at + kUnableToParse.size();
    // The line ends at a "': " after which the quoted text is a line that was sent.
    size_t end = line_start;
    bool found = false;
    while ((end = text.find("': ", end)) != std::string_view::npos &&
           end - line_start <= max_line_bytes) {
      if (end - line_start > budget) {
        e.incomplete = true;
        return e;
      }
      budget -= end - line_start;
      if (is_line(text.substr(line_start, end - line_start))) {
        found = true;
        break;
      }
      end += 1;
    }
    if (!found) {
      at = line_start;
      continue;
    }
    // The reason runs to the next line of the message, or to " dropped=".
    const size_t why_start = end + 3;
    size_t why_end = text.find('\n', why_start);
    if (why_end == std::string_view::npos) why_end = text.size();
    if (size_t d = text.rfind(" dropped=", why_end);
        d != std::string_view::npos && d >= why_start) {
      why_end = d;
    }
    e.unparsed.push_back({std::string(text.substr(line_start, end - line_start)),
                          std::string(text.substr(why_start, why_end - why_start))});
    at = why_end;
  }
  return e;
}

}  // namespace seedance::sinks
