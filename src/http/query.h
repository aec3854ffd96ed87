// The query of a request target (?a=1&b=x%2Fy): split and percent-decoded, and its encoding
// for a client. Written here because Boost 1.74 (Debian 12's) has no Boost.URL.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "seedance/result.h"

namespace seedance::http {

using QueryParams = std::vector<std::pair<std::string, std::string>>;

// The path of `target`, without its query.
std::string_view TargetPath(std::string_view target);
// The parameters of `target`'s query in their order ('+' is a space, %XX a byte).
// kInvalidArgument for a malformed escape.
Result<QueryParams> ParseQuery(std::string_view target);
// `text` percent-encoded for a query value (unreserved characters stay).
std::string EncodeQueryValue(std::string_view text);

}  // namespace seedance::http
