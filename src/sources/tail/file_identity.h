// Rotation identity: which file is which, whatever its name now. A file is its device and
// inode, followed when it is renamed (app.log -> app.log.1); its first bytes tell a new file
// that reuses an inode (or one replaced while Seedance was down) from the one a position was
// saved for.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace seedance::sources {

struct FileId {
  uint64_t device = 0;
  uint64_t inode = 0;
  auto operator<=>(const FileId&) const = default;
  // Its key in the checkpoint: "device:inode".
  std::string Key() const { return std::to_string(device) + ":" + std::to_string(inode); }
};

struct MatchedFile {
  std::string path;  // one name it has now
  uint64_t size = 0;
};

// Every regular file the globs match now, by identity (a file matched by two globs, or under
// two names, once).
std::map<FileId, MatchedFile> MatchFiles(const std::vector<std::string>& globs);

// The file's identity; false when `fd` cannot be stat'ed.
bool IdentityOf(int fd, FileId* id);

// Whether the file open at `fd` starts with the `head_bytes` bytes whose CRC-32C is
// `fingerprint` (head_bytes 0: nothing to compare, true).
bool SameHead(int fd, uint32_t fingerprint, uint32_t head_bytes);

// The file's first min(`max_bytes`, what it has) bytes.
std::string ReadHead(int fd, size_t max_bytes);

}  // namespace seedance::sources
