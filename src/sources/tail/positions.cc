#include "sources/tail/positions.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace seedance::sources {

std::vector<FilePosition> LoadPositions(const std::string& path) {
  std::vector<FilePosition> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    FilePosition p;
    if (!(fields >> p.device >> p.inode >> p.offset >> p.fingerprint >> p.head_bytes)) continue;
    fields.get();  // the space before the path
    std::getline(fields, p.path);
    out.push_back(std::move(p));
  }
  return out;
}

Status SavePositions(const std::string& path, const std::vector<FilePosition>& positions) {
  std::string text;
  for (const FilePosition& p : positions) {
    text += std::to_string(p.device) + " " + std::to_string(p.inode) + " " +
            std::to_string(p.offset) + " " + std::to_string(p.fingerprint) + " " +
            std::to_string(p.head_bytes) + " ";
    for (char c : p.path) text.push_back(c == '\n' ? '?' : c);  // one line per entry
    text.push_back('\n');
  }
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return UnavailableError("tail positions " + tmp + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      return UnavailableError("tail positions " + tmp + ": " + why);
    }
    done += static_cast<size_t>(n);
  }
  if (::fdatasync(fd) != 0 || ::close(fd) != 0) {
    return UnavailableError("tail positions " + tmp + ": " + std::strerror(errno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return UnavailableError("tail positions " + path + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace seedance::sources
