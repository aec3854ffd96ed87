// http:// and https:// endpoint URLs.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "seedance/result.h"

namespace seedance::util {

struct HttpUrl {
  bool tls = false;
  std::string host;
  uint16_t port = 80;
  std::string target = "/";  // path and query
  std::string HostHeader() const;
};

// kInvalidArgument with the expected form for anything else.
Result<HttpUrl> ParseHttpUrl(std::string_view url);

}  // namespace seedance::util
