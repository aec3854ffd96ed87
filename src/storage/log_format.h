// Byte layout of the durable queue's segment files. See docs/formats/queue-log.md.
//
// A segment is a sequence of records; each record is a 28-byte header and a payload:
//
//   offset size field
//   0      4    magic          0x5EEDD1CE, little-endian
//   4      4    payload_length little-endian
//   8      8    sequence       little-endian; strictly increasing across all segments
//   16     4    header_crc     masked CRC-32C of bytes 0..15 and 24..27 (with flags 1)
//   20     4    payload_crc    masked CRC-32C of the payload
//   24     1    tag            caller-defined (the pipeline stores the output)
//   25     1    flags          1: the header CRC covers the tag (records written before 0.3
//                              have 0 here and a header CRC of bytes 0..15 only)
//   26     2    reserved       zero
//   28     n    payload
//
// The header CRC makes the length trustworthy, so a record with a bad payload can be skipped
// by its length; after a bad header the reader scans forward for the next magic whose header
// CRC checks. A partial record at the end of the newest segment is a torn write (the end of
// the log), not corruption.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace seedance::storage {

inline constexpr uint32_t kRecordMagic = 0x5EEDD1CE;
inline constexpr size_t kHeaderSize = 28;
inline constexpr uint32_t kMaxPayload = 64u * 1024 * 1024;
inline constexpr char kHeaderCoversTag = 1;

// "<first sequence, 20 digits>.log"
std::string SegmentFileName(uint64_t first_sequence);
// Parses a segment file name; false when `name` is not one.
bool ParseSegmentFileName(const std::string& name, uint64_t* first_sequence);

}  // namespace seedance::storage
