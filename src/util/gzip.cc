#include "util/gzip.h"

#include <zlib.h>

namespace seedance::util {

Result<std::string> Gunzip(std::string_view gzip, size_t max_bytes) {
  z_stream z{};
  if (inflateInit2(&z, 15 + 16) != Z_OK) return InternalError("zlib: cannot start inflating");
  std::string out;
  char chunk[64 * 1024];
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gzip.data()));
  z.avail_in = static_cast<uInt>(gzip.size());
  int rc = Z_OK;
  while (true) {
    z.next_out = reinterpret_cast<Bytef*>(chunk);
    z.avail_out = sizeof chunk;
    rc = inflate(&z, Z_NO_FLUSH);
    const size_t produced = sizeof chunk - z.avail_out;
    if (out.size() + produced > max_bytes) {
      inflateEnd(&z);
      return ResourceExhaustedError("inflates to more than " + std::to_string(max_bytes) +
                                    " bytes");
    }
    out.append(chunk, produced);
    if (rc == Z_STREAM_END) {
      if (z.avail_in == 0) break;
      inflateReset(&z);  // another gzip member follows (concatenated files)
      continue;
    }
    if (rc == Z_BUF_ERROR) {
      inflateEnd(&z);
      return InvalidArgumentError("gzip data cut short");
    }
    if (rc != Z_OK) {
      const std::string why = z.msg != nullptr ? z.msg : "not gzip data";
      inflateEnd(&z);
      return InvalidArgumentError(why);
    }
    if (z.avail_in == 0 && z.avail_out != 0) {
      inflateEnd(&z);
      return InvalidArgumentError("gzip data cut short");
    }
  }
  inflateEnd(&z);
  return out;
}

}  // namespace seedance::util
