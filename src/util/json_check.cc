#include "util/json_check.h"

namespace seedance {

Status CheckJson(std::string_view text) {
  rapidjson::BaseReaderHandler<> handler;
  return json_internal::Read(text, handler, json_internal::StringMode::kDiscard);
}

}  // namespace seedance
