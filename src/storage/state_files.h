// StateFileStore: the StateFiles plugins keep their own state in (seedance/plugin_context.h),
// under one directory, every operation through a storage::FileSystem (tests inject faults).
#pragma once

#include <string>
#include <string_view>

#include "seedance/plugin_context.h"
#include "storage/file_system.h"

namespace seedance::storage {

class StateFileStore final : public StateFiles {
 public:
  // A state file larger than this is refused when read (it is a plugin's small state).
  static constexpr size_t kMaxBytes = 64 << 20;

  explicit StateFileStore(std::string dir, FileSystem& fs = PosixFileSystem())
      : dir_(std::move(dir)), fs_(fs) {}

  Result<std::string> Read(const std::string& name) override;
  Status Replace(const std::string& name, std::string_view content) override;

 private:
  const std::string dir_;
  FileSystem& fs_;
};

}  // namespace seedance::storage
