// RecordScanner: finds records in a byte range of a segment, checking both CRCs, skipping
// corrupt ones (by length when the header is sound, by scanning for the next valid header
// otherwise). Shared by log recovery and readers. Not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace seedance::storage {

struct ScannedRecord {
  uint64_t sequence = 0;
  uint8_t tag = 0;
  std::string_view payload;  // points into the scanned buffer
  size_t offset = 0;         // of the header, within the buffer
  size_t size = 0;           // header + payload
};

enum class ScanResult {
  kRecord,      // *record is valid
  kNeedMore,    // the buffer ends inside a record (or is empty)
  kCorruption,  // *skipped bytes were jumped over; call again
};

// Scans `buffer` from *pos. On kRecord and kCorruption, *pos moves past what was consumed.
// `corrupt_bytes` receives the number of bytes skipped on kCorruption.
ScanResult ScanRecord(std::string_view buffer, size_t* pos, ScannedRecord* record,
                      size_t* corrupt_bytes);

// How many records start in `bytes` (a torn tail): sound headers, each followed by its
// length, plus one for a trailing fragment too short to hold a header. Used to report how
// many records a truncation loses.
size_t CountRecordStarts(std::string_view bytes);

// Encodes one record (header + payload) onto `out`.
void EncodeRecord(uint64_t sequence, uint8_t tag, std::string_view payload, std::string& out);

// The same in two steps, for a payload encoded straight into `out` (no copy of a large one):
// BeginRecord reserves the header and returns where the record starts; the caller appends
// the payload; FinishRecord fills the header in.
size_t BeginRecord(std::string& out);
void FinishRecord(uint64_t sequence, uint8_t tag, size_t start, std::string& out);

}  // namespace seedance::storage
