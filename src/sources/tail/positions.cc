#include "sources/tail/positions.h"

#include <sstream>

namespace seedance::sources {

std::string FormatPositions(const std::vector<FilePosition>& positions) {
  std::string text;
  for (const FilePosition& p : positions) {
    text += std::to_string(p.device) + " " + std::to_string(p.inode) + " " +
            std::to_string(p.offset) + " " + std::to_string(p.fingerprint) + " " +
            std::to_string(p.head_bytes) + " ";
    for (char c : p.path) text.push_back(c == '\n' ? '?' : c);  // one line per entry
    text.push_back('\n');
  }
  return text;
}

std::vector<FilePosition> ParsePositions(std::string_view text) {
  std::vector<FilePosition> out;
  std::istringstream in{std::string(text)};
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

}  // namespace seedance::sources
