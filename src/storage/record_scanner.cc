#include "storage/record_scanner.h"

#include <bit>
#include <cstring>

#include "storage/crc32c.h"
#include "storage/log_format.h"

namespace seedance::storage {
namespace {

void PutU32(std::string& o, uint32_t v) { o.append(reinterpret_cast<const char*>(&v), 4); }
// Little-endian on disk; the host is checked to be little-endian (x86, ARM) at compile time.
static_assert(std::endian::native == std::endian::little, "big-endian hosts need byte swaps");
void PutU64(std::string& o, uint64_t v) { o.append(reinterpret_cast<const char*>(&v), 8); }
uint32_t GetU32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
uint64_t GetU64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// True when a sound header starts at `p` (magic, header CRC, sane length).
bool SoundHeader(const char* p) {
  if (GetU32(p) != kRecordMagic) return false;
  if (UnmaskCrc(GetU32(p + 16)) != Crc32c(std::string_view(p, 16))) return false;
  return GetU32(p + 4) <= kMaxPayload;
}

}  // namespace

void EncodeRecord(uint64_t sequence, uint8_t tag, std::string_view payload, std::string& out) {
  size_t start = out.size();
  PutU32(out, kRecordMagic);
  PutU32(out, static_cast<uint32_t>(payload.size()));
  PutU64(out, sequence);
  PutU32(out, MaskCrc(Crc32c(std::string_view(out.data() + start, 16))));
  PutU32(out, MaskCrc(Crc32c(payload)));
  out.push_back(static_cast<char>(tag));
  out.append(3, '\0');
  out.append(payload.data(), payload.size());
}

ScanResult ScanRecord(std::string_view buffer, size_t* pos, ScannedRecord* record,
                      size_t* corrupt_bytes) {
  size_t p = *pos;
  if (buffer.size() - p < kHeaderSize) return ScanResult::kNeedMore;
  const char* h = buffer.data() + p;
  if (!SoundHeader(h)) {
    // Resynchronize: the next offset where a sound header starts.
    size_t q = p + 1;
    while (q + kHeaderSize <= buffer.size() && !SoundHeader(buffer.data() + q)) ++q;
    if (q + kHeaderSize > buffer.size()) {
      // No sound header in what we have; keep the last bytes, a header may start there.
      size_t keep = std::min<size_t>(kHeaderSize - 1, buffer.size() - p);
      size_t skip = buffer.size() - p - keep;
      if (skip == 0) return ScanResult::kNeedMore;
      *pos = p + skip;
      *corrupt_bytes = skip;
      return ScanResult::kCorruption;
    }
    *pos = q;
    *corrupt_bytes = q - p;
    return ScanResult::kCorruption;
  }
  uint32_t length = GetU32(h + 4);
  if (buffer.size() - p < kHeaderSize + length) return ScanResult::kNeedMore;
  std::string_view payload(h + kHeaderSize, length);
  if (UnmaskCrc(GetU32(h + 20)) != Crc32c(payload)) {
    *pos = p + kHeaderSize + length;
    *corrupt_bytes = kHeaderSize + length;
    return ScanResult::kCorruption;
  }
  record->sequence = GetU64(h + 8);
  record->tag = static_cast<uint8_t>(h[24]);
  record->payload = payload;
  record->offset = p;
  record->size = kHeaderSize + length;
  *pos = p + record->size;
  return ScanResult::kRecord;
}

}  // namespace seedance::storage
