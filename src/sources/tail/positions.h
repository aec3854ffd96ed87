// Where the tail source has got to in each file, kept across restarts.
//
// One entry per file: its identity (device and inode, plus a fingerprint of its first bytes,
// so a new file that reuses an inode is not taken for the old one) and the offset just past
// the last line that is safe in the durable queue. Kept as a small text file, one line per
// file, in the source's StateFiles (replaced whole, never half written).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace seedance::sources {

struct FilePosition {
  uint64_t device = 0;
  uint64_t inode = 0;
  uint64_t offset = 0;       // just past the last stored line
  uint32_t fingerprint = 0;  // CRC-32C of the file's first `head_bytes` bytes
  uint32_t head_bytes = 0;   // how many: kFingerprintBytes, or fewer while the file was shorter
  std::string path;          // where it was last seen (for people reading the file)
  bool operator==(const FilePosition&) const = default;
};

// How many leading bytes identify a file (as many as it has, up to this).
inline constexpr size_t kFingerprintBytes = 256;

// The positions file's text: "device inode offset fingerprint head_bytes path" per line.
std::string FormatPositions(const std::vector<FilePosition>& positions);
// Lines that do not parse are skipped (a position lost means that file is read again from its
// beginning).
std::vector<FilePosition> ParsePositions(std::string_view text);

}  // namespace seedance::sources
