#include "storage/record_scanner.h"

#include <cstring>

#include "storage/log_format.h"
#include "util/crc32c.h"
#include "util/little_endian.h"

namespace seedance::storage {
namespace {

using util::GetFixed32;
using util::GetFixed64;

// The header CRC of the record whose header starts at `p`: bytes 0–15, and 24–27 (tag and
// flags) when the flags byte says so; records written before 0.3 have 0 there (bytes 0–15).
uint32_t HeaderCrc(const char* p) {
  return p[25] == kHeaderCoversTag ? util::Crc32c16And4(p, p + 24)
                                   : util::Crc32c(std::string_view(p, 16));
}

// True when a sound header starts at `p` (magic, flags, header CRC, sane length).
bool SoundHeader(const char* p) {
  if (GetFixed32(p) != kRecordMagic) return false;
  if (p[25] != 0 && p[25] != kHeaderCoversTag) return false;
  if (util::UnmaskCrc(GetFixed32(p + 16)) != HeaderCrc(p)) return false;
  return GetFixed32(p + 4) <= kMaxPayload;
}

}  // namespace

size_t CountRecordStarts(std::string_view bytes) {
  size_t count = 0;
  size_t p = 0;
  bool at_boundary = true;  // p is where a record would start
  while (p < bytes.size()) {
    if (bytes.size() - p >= kHeaderSize && SoundHeader(bytes.data() + p)) {
      ++count;
      p += kHeaderSize + GetFixed32(bytes.data() + p + 4);
      at_boundary = true;
      continue;
    }
    if (at_boundary) ++count;  // bytes that start a record we cannot read
    at_boundary = false;
    ++p;
  }
  return count;
}

void EncodeRecord(uint64_t sequence, uint8_t tag, std::string_view payload, std::string& out) {
  const size_t start = BeginRecord(out);
  out.append(payload.data(), payload.size());
  FinishRecord(sequence, tag, start, out);
}

size_t BeginRecord(std::string& out) {
  const size_t start = out.size();
  out.append(kHeaderSize, '\0');
  return start;
}

void FinishRecord(uint64_t sequence, uint8_t tag, size_t start, std::string& out) {
  char* h = out.data() + start;
  const std::string_view payload(h + kHeaderSize, out.size() - start - kHeaderSize);
  const auto put32 = [](char* at, uint32_t v) { std::memcpy(at, &v, 4); };
  put32(h, kRecordMagic);
  put32(h + 4, static_cast<uint32_t>(payload.size()));
  std::memcpy(h + 8, &sequence, 8);
  put32(h + 16, 0);  // header CRC, below: it covers the tag too
  put32(h + 20, util::MaskCrc(util::Crc32c(payload)));
  h[24] = static_cast<char>(tag);
  h[25] = static_cast<char>(kHeaderCoversTag);
  h[26] = h[27] = 0;
  put32(h + 16, util::MaskCrc(HeaderCrc(h)));
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
  uint32_t length = GetFixed32(h + 4);
  if (buffer.size() - p < kHeaderSize + length) return ScanResult::kNeedMore;
  std::string_view payload(h + kHeaderSize, length);
  if (util::UnmaskCrc(GetFixed32(h + 20)) != util::Crc32c(payload)) {
    *pos = p + kHeaderSize + length;
    *corrupt_bytes = kHeaderSize + length;
    return ScanResult::kCorruption;
  }
  record->sequence = GetFixed64(h + 8);
  record->tag = static_cast<uint8_t>(h[24]);
  record->payload = payload;
  record->offset = p;
  record->size = kHeaderSize + length;
  *pos = p + record->size;
  return ScanResult::kRecord;
}

}  // namespace seedance::storage
