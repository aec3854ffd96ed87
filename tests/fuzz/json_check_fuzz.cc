// Fuzz target for the payload JSON check (util/json_check.h): any bytes. CheckJson and
// ParseJson must agree, never recurse past kMaxJsonDepth, and whatever they accept must
// serialise back to JSON that they accept again. (It found two gaps: unpaired surrogate
// escapes and numbers RapidJSON rounds to infinity were accepted.)
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "fuzz/fuzz_target.h"
#include "util/json_check.h"

SEEDANCE_FUZZ_TARGET(json_check) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const seedance::Status checked = seedance::CheckJson(text);
  rapidjson::Document doc;
  const seedance::Status parsed = seedance::ParseJson(text, doc);
  if (checked.ok() != parsed.ok()) {
    seedance::fuzz::Fail("json_check", "CheckJson and ParseJson disagree", text);
  }
  if (!parsed.ok()) return 0;
  rapidjson::StringBuffer out;
  rapidjson::Writer<rapidjson::StringBuffer> writer(out);
  if (!doc.Accept(writer)) {
    seedance::fuzz::Fail("json_check", "an accepted document cannot be written", text);
  }
  if (!seedance::CheckJson(std::string_view(out.GetString(), out.GetSize())).ok()) {
    seedance::fuzz::Fail("json_check", "the written document is refused", text);
  }
  return 0;
}
