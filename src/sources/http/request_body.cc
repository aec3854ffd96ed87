#include "sources/http/request_body.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cctype>

#include "util/json_check.h"

namespace seedance::sources {
namespace {

bool IsNdjsonType(std::string_view content_type) {
  std::string type(content_type.substr(0, content_type.find(';')));
  type.erase(std::remove_if(type.begin(), type.end(), [](unsigned char c) { return c == ' '; }),
             type.end());
  std::transform(type.begin(), type.end(), type.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return type == "application/x-ndjson" || type == "application/ndjson" ||
         type == "application/jsonl" || type == "application/x-jsonlines";
}

std::string_view Trim(std::string_view s) {
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

Status TooMany(size_t max_events) {
  return ResourceExhaustedError("more than " + std::to_string(max_events) +
                                " events in one request");
}

Result<std::vector<std::string>> SplitNdjson(std::string_view body, size_t max_events) {
  std::vector<std::string> out;
  size_t line_no = 0;
  while (!body.empty()) {
    const size_t nl = body.find('\n');
    const std::string_view line = Trim(body.substr(0, nl));
    body = nl == std::string_view::npos ? std::string_view() : body.substr(nl + 1);
    ++line_no;
    if (line.empty()) continue;
    if (Status s = CheckJson(line); !s.ok()) {
      return InvalidArgumentError("line " + std::to_string(line_no) + ": " + s.message());
    }
    if (out.size() == max_events) return TooMany(max_events);
    out.emplace_back(line);
  }
  return out;
}

Result<std::vector<std::string>> SplitJson(std::string_view body, size_t max_events) {
  const std::string_view text = Trim(body);
  rapidjson::Document doc;
  SEEDANCE_RETURN_IF_ERROR(ParseJson(text, doc));
  std::vector<std::string> out;
  if (!doc.IsArray()) {
    out.emplace_back(text);
    return out;
  }
  if (doc.Size() > max_events) return TooMany(max_events);
  out.reserve(doc.Size());
  for (const rapidjson::Value& element : doc.GetArray()) {
    rapidjson::StringBuffer buffer;
    rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
    element.Accept(writer);
    out.emplace_back(buffer.GetString(), buffer.GetSize());
  }
  return out;
}

}  // namespace

Result<std::vector<std::string>> SplitBody(std::string_view body, BodyFormat format,
                                           std::string_view content_type, size_t max_events) {
  if (Trim(body).empty()) return InvalidArgumentError("the request has no body");
  const bool ndjson =
      format == BodyFormat::kNdjson || (format == BodyFormat::kAuto && IsNdjsonType(content_type));
  return ndjson ? SplitNdjson(body, max_events) : SplitJson(body, max_events);
}

}  // namespace seedance::sources
