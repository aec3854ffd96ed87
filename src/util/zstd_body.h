// zstd (RFC 8878) decompression with a bound on the output, for request bodies from untrusted
// clients (see util/gzip.h: the same bomb, the same answer). libzstd does the work.
#pragma once

#include <string>
#include <string_view>

#include "seedance/result.h"

namespace seedance::util {

// The decompressed bytes of `zstd` (one or more frames), at most `max_bytes` of them:
// kResourceExhausted past that, kInvalidArgument for data that is not zstd or is cut short.
Result<std::string> Unzstd(std::string_view zstd, size_t max_bytes);

}  // namespace seedance::util
