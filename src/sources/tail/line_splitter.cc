#include "sources/tail/line_splitter.h"

namespace seedance::sources {

void LineSplitter::Restart(uint64_t offset) {
  bytes_.clear();
  pos_ = 0;
  start_ = offset;
  skipping_ = false;
}

void LineSplitter::Append(const char* data, size_t n) { bytes_.append(data, n); }

std::optional<LinePiece> LineSplitter::Peek() {
  if (pos_ >= bytes_.size()) return std::nullopt;
  const size_t nl = bytes_.find('\n', pos_);
  if (nl == std::string::npos) {
    if (skipping_) {
      pos_ = bytes_.size();  // more of a line too long: dropped as it arrives
      return std::nullopt;
    }
    if (bytes_.size() - pos_ <= max_line_) return std::nullopt;  // the line is still coming
    // Already too long without its end: reported now, the rest skipped.
    next_pos_ = bytes_.size();
    next_skipping_ = true;
    next_line_no_ = line_no_;
    return LinePiece{LinePiece::Kind::kTooLong, std::string_view(bytes_).substr(pos_, kTooLongKept),
                     start_ + bytes_.size(), line_no_ + 1};
  }
  next_pos_ = nl + 1;
  next_skipping_ = false;
  next_line_no_ = line_no_ + 1;
  const uint64_t end = start_ + nl + 1;
  if (skipping_) return LinePiece{LinePiece::Kind::kDone, {}, end, next_line_no_};
  std::string_view line(bytes_.data() + pos_, nl - pos_);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.size() > max_line_) {
    return LinePiece{LinePiece::Kind::kTooLong, line.substr(0, kTooLongKept), end, next_line_no_};
  }
  if (line.find_first_not_of(" \t") == std::string_view::npos) {
    return LinePiece{LinePiece::Kind::kDone, {}, end, next_line_no_};
  }
  return LinePiece{LinePiece::Kind::kLine, line, end, next_line_no_};
}

void LineSplitter::Take() {
  pos_ = next_pos_;
  skipping_ = next_skipping_;
  line_no_ = next_line_no_;
}

void LineSplitter::Compact() {
  bytes_.erase(0, pos_);
  start_ += pos_;
  pos_ = 0;
}

}  // namespace seedance::sources
