#include "core/json_check.h"

#include <rapidjson/error/en.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>

#include <string>

namespace seedance {

Status CheckJson(std::string_view text) {
  thread_local rapidjson::Reader reader;
  rapidjson::BaseReaderHandler<> handler;
  rapidjson::MemoryStream stream(text.data(), text.size());
  rapidjson::ParseResult r =
      reader.Parse<rapidjson::kParseValidateEncodingFlag | rapidjson::kParseStopWhenDoneFlag>(
          stream, handler);
  if (r.IsError()) {
    return InvalidArgumentError("invalid JSON at offset " + std::to_string(r.Offset()) + ": " +
                                rapidjson::GetParseError_En(r.Code()));
  }
  // kParseStopWhenDoneFlag lets us see trailing garbage ourselves.
  for (size_t i = stream.Tell(); i < text.size(); ++i) {
    char c = text[i];
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t') {
      return InvalidArgumentError("invalid JSON at offset " + std::to_string(i) +
                                  ": unexpected data after the value");
    }
  }
  return Status::Ok();
}

}  // namespace seedance
