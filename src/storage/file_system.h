// FileSystem: every write, fsync, truncate, rename, unlink and directory sync that storage code
// makes (the durable queue, its cursors, the checkpoint log) goes through one of these, so tests
// can substitute a file system that fails (ENOSPC, EIO, short writes, fsync errors) or crashes
// at any operation and drops what was never synced (tests/testing/fault_file_system.h).
//
// The methods mirror POSIX: a failure returns -1 with errno set. PosixFileSystem() is the real
// one. Implementations are thread-safe.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "seedance/result.h"

namespace seedance::storage {

class FileSystem {
 public:
  virtual ~FileSystem() = default;
  virtual int Open(const std::string& path, int flags, mode_t mode) = 0;
  virtual int Close(int fd) = 0;
  // May write less than `size` (a short write); the caller retries the rest.
  virtual ssize_t Write(int fd, const void* data, size_t size) = 0;
  // Writes at `offset` (the file position is unchanged); may be short, like Write.
  virtual ssize_t PWrite(int fd, const void* data, size_t size, off_t offset) = 0;
  virtual ssize_t PRead(int fd, void* data, size_t size, off_t offset) = 0;
  virtual int Fdatasync(int fd) = 0;
  virtual int Ftruncate(int fd, off_t size) = 0;
  virtual int Rename(const std::string& from, const std::string& to) = 0;
  virtual int Unlink(const std::string& path) = 0;
  // fsync(2) of a directory: makes file creations, renames and unlinks in it durable.
  virtual int SyncDir(const std::string& dir) = 0;

  // Writes all of `data`, retrying short writes and EINTR. 0, or the errno of the failure.
  int WriteAll(int fd, std::string_view data);
  // The same at `offset`.
  int PWriteAll(int fd, std::string_view data, off_t offset);
  // The whole file (at most `max_bytes`). kNotFound when it does not exist, kDataLoss when it
  // is larger than `max_bytes` (its content is wrong), kUnavailable on other errors (the
  // message names the path and the reason).
  Result<std::string> ReadFile(const std::string& path, size_t max_bytes = SIZE_MAX);
};

// The real file system (plain system calls).
FileSystem& PosixFileSystem();

// errno as "ENOSPC"-style class: true for "no space left" (ENOSPC, EDQUOT), which storage treats
// like reaching its configured disk limit rather than as a failure.
bool IsNoSpace(int err);

}  // namespace seedance::storage
