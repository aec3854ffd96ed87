// FaultFileSystem: a storage::FileSystem over the real one that fails the way disks do, for
// the storage tests (tests/crash/). Under `root` it can
//   - fail the next calls of one operation with an errno (EIO, ENOSPC, ...), reads included
//     (kOpen: an open that creates nothing, such as a segment opened to be read; kRead: a
//     pread), which are not counted as mutating operations;
//   - run out of space at a byte limit (writes are short, then ENOSPC);
//   - make every write short (half of it, at least one byte);
//   - crash at the n-th mutating operation: that operation (a write leaves half its bytes, a
//     torn write) and every later one fail with EIO, as if the process had died there;
//   - then drop what was never made durable, as a power cut would: every file it manages
//     goes back to its content at its last fdatasync, every directory to its entries at its
//     last directory sync (files never synced come back empty, or not at all).
// Files it did not create or open (LOCK files, directories) are left alone.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "storage/file_system.h"

namespace seedance::testing {

class FaultFileSystem final : public storage::FileSystem {
 public:
  enum class Op {
    kWrite,
    kFdatasync,
    kFtruncate,
    kRename,
    kUnlink,
    kSyncDir,
    kCreate,
    kOpen,
    kRead
  };

  // Everything under `root` as it is now counts as durable.
  explicit FaultFileSystem(std::string root);

  // The next `times` calls of `op` fail with `err`; for kOpen and kRead, only those on a path
  // containing `path_part` when it is not empty.
  void FailNext(Op op, int err, int times = 1, std::string path_part = "");
  void SetSpaceLimit(uint64_t bytes);  // UINT64_MAX: none
  void SetShortWrites(bool on);
  void CrashAtOperation(uint64_t n);  // 1-based; 0: never
  // The n-th mutating operation (1-based) fails with `err`, once; the rest go through.
  void FailOperation(uint64_t n, int err);
  bool crashed() const;
  uint64_t operations() const;      // mutating operations so far
  std::string crash_point() const;  // "write <path>" where it crashed
  // What a power cut leaves (see above). Call after the objects using this were destroyed;
  // afterwards the current state counts as durable and nothing is crashed.
  void DropUnsyncedData();

  int Open(const std::string& path, int flags, mode_t mode) override;
  int Close(int fd) override;
  ssize_t Write(int fd, const void* data, size_t size) override;
  ssize_t PWrite(int fd, const void* data, size_t size, off_t offset) override;
  ssize_t PRead(int fd, void* data, size_t size, off_t offset) override;
  int Fdatasync(int fd) override;
  int Ftruncate(int fd, off_t size) override;
  int Rename(const std::string& from, const std::string& to) override;
  int Unlink(const std::string& path) override;
  int SyncDir(const std::string& dir) override;

 private:
  // Write and PWrite (offset -1: at the file position), with the same faults.
  ssize_t WriteAt(int fd, const void* data, size_t size, off_t offset);
  // Counts a mutating operation; false (errno set) when it must fail.
  bool Begin(Op op, const std::string& what);
  // A read fault (kOpen, kRead) due now: false (errno set) when the call must fail.
  bool ReadAllowed(Op op, const std::string& path);
  void Snapshot();
  uint64_t UsedBytes() const;
  static std::string Parent(const std::string& path);
  static std::string Normal(const std::string& path);

  const std::string root_;
  mutable std::mutex mu_;
  std::map<Op, std::pair<int, int>> fail_;  // op → (errno, times)
  std::map<Op, std::string> fail_path_;     // op → the part of a path a read fault needs
  uint64_t space_limit_ = UINT64_MAX;
  bool short_writes_ = false;
  uint64_t crash_at_ = 0;
  uint64_t fail_at_ = 0;
  int fail_at_errno_ = 0;
  uint64_t operations_ = 0;
  bool crashed_ = false;
  std::string crash_point_;
  // The durability model: files by identity (stable across renames).
  uint64_t next_id_ = 1;
  std::map<std::string, uint64_t> path_id_;              // current names of managed files
  std::map<int, std::pair<std::string, uint64_t>> fds_;  // fd → (path at open, id)
  std::map<uint64_t, std::string> durable_content_;      // id → content at its last fdatasync
  std::map<std::string, std::map<std::string, uint64_t>> durable_dirs_;  // dir → name → id
};

}  // namespace seedance::testing
