#include "util/body_compressor.h"

#include <snappy.h>
#include <zlib.h>
#include <zstd.h>

namespace seedance::util {

std::vector<std::pair<std::string, BodyCompression>> BodyCompressionChoices() {
  return {{"none", BodyCompression::kNone},
          {"gzip", BodyCompression::kGzip},
          {"zstd", BodyCompression::kZstd},
          {"snappy", BodyCompression::kSnappy}};
}

std::string_view ContentEncoding(BodyCompression c) {
  switch (c) {
    case BodyCompression::kGzip:
      return "gzip";
    case BodyCompression::kZstd:
      return "zstd";
    case BodyCompression::kSnappy:
      return "snappy";
    case BodyCompression::kNone:
      break;
  }
  return "";
}

int DefaultCompressionLevel(BodyCompression c) {
  return c == BodyCompression::kGzip ? 6 : c == BodyCompression::kZstd ? 3 : 0;
}

int MaxCompressionLevel(BodyCompression c) {
  return c == BodyCompression::kGzip ? 9 : c == BodyCompression::kZstd ? 19 : 0;
}

struct BodyCompressor::Streams {
  z_stream z{};
  bool z_ready = false;
  ZSTD_CCtx* zstd = nullptr;
  ~Streams() {
    if (z_ready) deflateEnd(&z);
    ZSTD_freeCCtx(zstd);
  }
};

BodyCompressor::BodyCompressor(BodyCompression c, int level)
    : kind_(c),
      level_(level == 0 ? DefaultCompressionLevel(c) : level),
      streams_(std::make_unique<Streams>()) {}

BodyCompressor::~BodyCompressor() = default;

bool BodyCompressor::Compress(std::string_view in, std::string& out) {
  Streams& s = *streams_;
  switch (kind_) {
    case BodyCompression::kNone:
      out.assign(in);
      return true;
    case BodyCompression::kGzip: {
      if (!s.z_ready) {
        // windowBits 15 + 16: a gzip header and trailer around the deflate stream.
        if (deflateInit2(&s.z, level_, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
          return false;
        }
        s.z_ready = true;
      } else if (deflateReset(&s.z) != Z_OK) {
        return false;
      }
      out.resize(deflateBound(&s.z, in.size()));
      s.z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
      s.z.avail_in = static_cast<uInt>(in.size());
      s.z.next_out = reinterpret_cast<Bytef*>(out.data());
      s.z.avail_out = static_cast<uInt>(out.size());
      // deflateBound is enough for one Z_FINISH call.
      if (deflate(&s.z, Z_FINISH) != Z_STREAM_END) return false;
      out.resize(out.size() - s.z.avail_out);
      return true;
    }
    case BodyCompression::kZstd: {
      if (s.zstd == nullptr) {
        s.zstd = ZSTD_createCCtx();
        if (s.zstd == nullptr) return false;
        ZSTD_CCtx_setParameter(s.zstd, ZSTD_c_compressionLevel, level_);
        // The content size in the frame header lets the receiver allocate once.
        ZSTD_CCtx_setParameter(s.zstd, ZSTD_c_contentSizeFlag, 1);
      }
      out.resize(ZSTD_compressBound(in.size()));
      const size_t n = ZSTD_compress2(s.zstd, out.data(), out.size(), in.data(), in.size());
      if (ZSTD_isError(n)) return false;
      out.resize(n);
      return true;
    }
    case BodyCompression::kSnappy: {
      // The block format (no framing), as Prometheus remote write reads it.
      out.resize(snappy::MaxCompressedLength(in.size()));
      size_t n = 0;
      snappy::RawCompress(in.data(), in.size(), out.data(), &n);
      out.resize(n);
      return true;
    }
  }
  return false;
}

}  // namespace seedance::util
