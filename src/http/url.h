// http:// and https:// endpoint URLs (what the client connects to).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "seedance/result.h"

namespace seedance::http {

struct Url {
  bool tls = false;
  std::string host;
  uint16_t port = 80;
  std::string target = "/";  // path and query
  std::string HostHeader() const;
};

// kInvalidArgument with the expected form for anything else.
Result<Url> ParseUrl(std::string_view url);

}  // namespace seedance::http
