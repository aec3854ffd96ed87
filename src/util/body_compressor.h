// Compresses request bodies (gzip, RFC 1952; zstd, RFC 8878; or snappy's block format, which
// Prometheus remote write requires) for the sinks that send them over HTTP (`compression:`).
// One compressor per client, used on its event loop: the zlib stream and the zstd context are
// made once and reset per body, so a steady load allocates nothing here. zlib, libzstd and
// libsnappy do the work (all linked statically).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace seedance::util {

enum class BodyCompression { kNone, kGzip, kZstd, kSnappy };

// The config words: "none", "gzip", "zstd", "snappy".
std::vector<std::pair<std::string, BodyCompression>> BodyCompressionChoices();

// The Content-Encoding value ("gzip", "zstd", "snappy"; "" for none).
std::string_view ContentEncoding(BodyCompression c);

// The levels each takes: gzip 1-9, zstd 1-19 (the default when `level` is 0: 6 and 3);
// snappy has none (0).
int DefaultCompressionLevel(BodyCompression c);
int MaxCompressionLevel(BodyCompression c);

class BodyCompressor {
 public:
  // REQUIRES: 0 <= level <= MaxCompressionLevel(c); 0 is the default level.
  BodyCompressor(BodyCompression c, int level);
  ~BodyCompressor();
  BodyCompressor(const BodyCompressor&) = delete;
  BodyCompressor& operator=(const BodyCompressor&) = delete;

  BodyCompression kind() const { return kind_; }
  // `in` compressed into `out` (replaced; its storage is reused). Returns false only when the
  // library fails (out of memory): then `out` is unspecified.
  bool Compress(std::string_view in, std::string& out);

 private:
  struct Streams;
  BodyCompression kind_;
  int level_;
  std::unique_ptr<Streams> streams_;
};

}  // namespace seedance::util
