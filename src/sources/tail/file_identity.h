// Rotation identity: which file is which, whatever its name now. A file is its device and
// inode, followed when it is renamed (app.log -> app.log.1); its first bytes tell a new file
// that reuses an inode (or one replaced while Seedance was down) from the one a position was
// saved for.
#pragma once

#include <sys/stat.h>

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

// The identity of the file `st` describes.
FileId FileIdOf(const struct stat& st);

struct MatchedFile {
  std::string path;  // one name it has now
  uint64_t size = 0;
};

// Every regular file the globs match now, by identity (a file matched by two globs, or under
// two names, once), into `out`. False when a directory could not be read (out of
// descriptors, no permission): `out` then misses files that are there, so none missing from
// it may be taken as gone; `error` says which directory and why, `err` the errno.
bool MatchFiles(const std::vector<std::string>& globs, std::map<FileId, MatchedFile>* out,
                std::string* error, int* err);

// Opens `path` to read if it is still the regular file `id`. A name matched by a scan can be
// something else by the time it is opened (renamed over, or a FIFO put in its place: a
// blocking open of a FIFO would hang the tail), so the open does not block and the file is
// checked after it. Returns the descriptor; kOpenFailed with errno; kNotThatFile when the
// name now holds another file or no regular file (found again by the next scan, if at all).
inline constexpr int kOpenFailed = -1;
inline constexpr int kNotThatFile = -2;
int OpenMatchedFile(const std::string& path, const FileId& id);

// Whether the file open at `fd` starts with the `head_bytes` bytes whose CRC-32C is
// `fingerprint` (head_bytes 0: nothing to compare, true).
bool SameHead(int fd, uint32_t fingerprint, uint32_t head_bytes);

// The file's first min(`max_bytes`, what it has) bytes.
std::string ReadHead(int fd, size_t max_bytes);

}  // namespace seedance::sources
