#include "storage/file_system.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace seedance::storage {
namespace {

class Posix final : public FileSystem {
 public:
  int Open(const std::string& path, int flags, mode_t mode) override {
    int fd;
    do {
      fd = ::open(path.c_str(), flags | O_CLOEXEC, mode);
    } while (fd < 0 && errno == EINTR);
    return fd;
  }
  int Close(int fd) override { return ::close(fd); }
  ssize_t Write(int fd, const void* data, size_t size) override { return ::write(fd, data, size); }
  ssize_t PWrite(int fd, const void* data, size_t size, off_t offset) override {
    return ::pwrite(fd, data, size, offset);
  }
  ssize_t PRead(int fd, void* data, size_t size, off_t offset) override {
    return ::pread(fd, data, size, offset);
  }
  int Fdatasync(int fd) override { return ::fdatasync(fd); }
  int Ftruncate(int fd, off_t size) override { return ::ftruncate(fd, size); }
  int Rename(const std::string& from, const std::string& to) override {
    return ::rename(from.c_str(), to.c_str());
  }
  int Unlink(const std::string& path) override { return ::unlink(path.c_str()); }
  int SyncDir(const std::string& dir) override {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    const int rc = ::fsync(fd);
    const int err = errno;
    ::close(fd);
    errno = err;
    return rc;
  }
};

}  // namespace

int FileSystem::WriteAll(int fd, std::string_view data) {
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = Write(fd, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EIO;  // a write that makes no progress would loop forever
    off += static_cast<size_t>(n);
  }
  return 0;
}

int FileSystem::PWriteAll(int fd, std::string_view data, off_t offset) {
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n =
        PWrite(fd, data.data() + off, data.size() - off, offset + static_cast<off_t>(off));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EIO;
    off += static_cast<size_t>(n);
  }
  return 0;
}

Result<std::string> FileSystem::ReadFile(const std::string& path, size_t max_bytes) {
  const int fd = Open(path, O_RDONLY, 0);
  if (fd < 0) {
    const StatusCode code = errno == ENOENT ? StatusCode::kNotFound : StatusCode::kUnavailable;
    return Status(code, "open " + path + ": " + std::strerror(errno));
  }
  std::string data;
  char buf[1 << 16];
  while (true) {
    const ssize_t n = PRead(fd, buf, sizeof buf, static_cast<off_t>(data.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Status s = UnavailableError("read " + path + ": " + std::strerror(errno));
      Close(fd);
      return s;
    }
    if (n == 0) break;
    if (data.size() + static_cast<size_t>(n) > max_bytes) {
      Close(fd);
      return Status(StatusCode::kDataLoss, "read " + path + ": larger than " +
                                               std::to_string(max_bytes) +
                                               " bytes, more than such a file may hold");
    }
    data.append(buf, static_cast<size_t>(n));
  }
  Close(fd);
  return data;
}

FileSystem& PosixFileSystem() {
  static Posix fs;
  return fs;
}

bool IsNoSpace(int err) { return err == ENOSPC || err == EDQUOT; }

}  // namespace seedance::storage
