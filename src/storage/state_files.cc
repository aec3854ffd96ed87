#include "storage/state_files.h"

#include <fcntl.h>

#include <cstring>
#include <filesystem>

namespace seedance::storage {

Result<std::string> StateFileStore::Read(const std::string& name) {
  return fs_.ReadFile(dir_ + "/" + name, kMaxBytes);
}

Status StateFileStore::Replace(const std::string& name, std::string_view content) {
  const std::string path = dir_ + "/" + name;
  const std::string folder = std::filesystem::path(path).parent_path().string();
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  if (ec) return UnavailableError("cannot create " + folder + ": " + ec.message());
  const std::string tmp = path + ".tmp";
  auto fail = [&](const std::string& what, int err) {
    return UnavailableError(what + " " + tmp + ": " + std::strerror(err));
  };
  const int fd = fs_.Open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return fail("open", errno);
  if (const int err = fs_.WriteAll(fd, content); err != 0) {
    fs_.Close(fd);
    return fail("write", err);
  }
  if (fs_.Fdatasync(fd) != 0) {
    const int err = errno;
    fs_.Close(fd);
    return fail("fdatasync", err);
  }
  if (fs_.Close(fd) != 0) return fail("close", errno);
  if (fs_.Rename(tmp, path) != 0) {
    return UnavailableError("rename " + tmp + " to " + path + ": " + std::strerror(errno));
  }
  if (fs_.SyncDir(folder) != 0) {
    return UnavailableError("sync " + folder + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace seedance::storage
