#include "sources/tail/file_identity.h"

#include <fcntl.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string_view>

#include "sources/tail/positions.h"
#include "util/crc32c.h"

namespace seedance::sources {

FileId FileIdOf(const struct stat& st) {
  return FileId{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
}

namespace {
// glob(3)'s error callback has no context argument: the first failure of the current
// MatchFiles call (one thread's) is kept here.
thread_local std::string glob_error_path;
thread_local int glob_error = 0;

int OnGlobError(const char* path, int err) {
  if (glob_error == 0) {
    glob_error = err;
    glob_error_path = path;
  }
  return 0;  // go on with the other directories; the caller still knows the match is partial
}
}  // namespace

bool MatchFiles(const std::vector<std::string>& globs, std::map<FileId, MatchedFile>* out,
                std::string* error, int* err) {
  out->clear();
  glob_error = 0;
  for (const std::string& pattern : globs) {
    glob_t g{};
    if (::glob(pattern.c_str(), GLOB_NOSORT, OnGlobError, &g) == 0) {
      for (size_t i = 0; i < g.gl_pathc; ++i) {
        struct stat st {};
        if (::stat(g.gl_pathv[i], &st) != 0 || !S_ISREG(st.st_mode)) continue;
        out->emplace(FileIdOf(st), MatchedFile{g.gl_pathv[i], static_cast<uint64_t>(st.st_size)});
      }
    }
    ::globfree(&g);
  }
  if (glob_error == 0) return true;
  *err = glob_error;
  *error = "cannot list " + glob_error_path + ": " + std::strerror(glob_error);
  return false;
}

int OpenMatchedFile(const std::string& path, const FileId& id) {
  // O_NONBLOCK changes nothing for a regular file's reads; it only keeps a FIFO's open (and
  // a device's) from waiting.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return kOpenFailed;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || FileIdOf(st) != id) {
    ::close(fd);
    return kNotThatFile;
  }
  return fd;
}

bool SameHead(int fd, uint32_t fingerprint, uint32_t head_bytes) {
  if (head_bytes == 0) return true;  // saved before anything was stored
  char head[kFingerprintBytes];
  const size_t want = std::min<size_t>(head_bytes, sizeof head);
  const ssize_t n = ::pread(fd, head, want, 0);
  return n == static_cast<ssize_t>(want) &&
         util::Crc32c(std::string_view(head, want)) == fingerprint;
}

std::string ReadHead(int fd, size_t max_bytes) {
  char head[kFingerprintBytes];
  const ssize_t n = ::pread(fd, head, std::min(sizeof head, max_bytes), 0);
  return n > 0 ? std::string(head, static_cast<size_t>(n)) : std::string();
}

}  // namespace seedance::sources
