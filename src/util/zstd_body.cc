#include "util/zstd_body.h"

#include <zstd.h>

#include <memory>

namespace seedance::util {

Result<std::string> Unzstd(std::string_view zstd, size_t max_bytes) {
  std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> ctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  if (!ctx) return InternalError("zstd: cannot start decompressing");
  // A frame may ask for a window of up to 2 GiB; the bound keeps what one request can make
  // the decoder allocate small (8 MiB, zstd's default limit for level ≤ 19).
  ZSTD_DCtx_setParameter(ctx.get(), ZSTD_d_windowLogMax, 23);
  std::string out;
  char chunk[64 * 1024];
  ZSTD_inBuffer in{zstd.data(), zstd.size(), 0};
  size_t last = 1;  // 0 once a frame is complete
  while (in.pos < in.size) {
    ZSTD_outBuffer o{chunk, sizeof chunk, 0};
    last = ZSTD_decompressStream(ctx.get(), &o, &in);
    if (ZSTD_isError(last)) return InvalidArgumentError(ZSTD_getErrorName(last));
    if (out.size() + o.pos > max_bytes) {
      return ResourceExhaustedError("inflates to more than " + std::to_string(max_bytes) +
                                    " bytes");
    }
    out.append(chunk, o.pos);
    if (o.pos == 0 && in.pos == in.size) break;
  }
  // Flush what the decoder still holds for the last frame.
  while (last != 0) {
    ZSTD_outBuffer o{chunk, sizeof chunk, 0};
    last = ZSTD_decompressStream(ctx.get(), &o, &in);
    if (ZSTD_isError(last)) return InvalidArgumentError(ZSTD_getErrorName(last));
    if (out.size() + o.pos > max_bytes) {
      return ResourceExhaustedError("inflates to more than " + std::to_string(max_bytes) +
                                    " bytes");
    }
    out.append(chunk, o.pos);
    if (o.pos == 0 && last != 0) return InvalidArgumentError("zstd data cut short");
  }
  return out;
}

}  // namespace seedance::util
