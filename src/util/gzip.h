// gzip (RFC 1952) decompression with a bound on the output, for request bodies from untrusted
// clients: a few kilobytes can inflate to gigabytes ("zip bomb"), so inflating stops at the
// bound instead of growing without end. zlib does the work (linked statically already).
#pragma once

#include <string>
#include <string_view>

#include "seedance/result.h"

namespace seedance::util {

// The decompressed bytes of `gzip` (one or more members), at most `max_bytes` of them:
// kResourceExhausted past that, kInvalidArgument for data that is not gzip or is cut short.
Result<std::string> Gunzip(std::string_view gzip, size_t max_bytes);

}  // namespace seedance::util
