#include "storage/cursor_file.h"

#include <fcntl.h>

#include <string_view>

#include "storage/record_scanner.h"

namespace seedance::storage {
namespace {

constexpr uint8_t kCursorTag = 0;
// Positions beyond this are damage: sequence numbers must have room to grow.
constexpr uint64_t kMaxPosition = uint64_t{1} << 62;

}  // namespace

CursorFile ReadCursorFile(FileSystem& fs, const std::string& path, uint64_t* position) {
  auto data = fs.ReadFile(path, 4096);
  if (!data)
    return data.error().code() == StatusCode::kNotFound ? CursorFile::kMissing
                                                        : CursorFile::kDamaged;
  const std::string& bytes = *data;
  size_t pos = 0;
  ScannedRecord record;
  size_t skipped = 0;
  if (ScanRecord(bytes, &pos, &record, &skipped) == ScanResult::kRecord && pos == bytes.size() &&
      record.tag == kCursorTag && record.payload.empty() && record.sequence <= kMaxPosition) {
    *position = record.sequence;
    return CursorFile::kOk;
  }
  std::string_view text(bytes);
  if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  if (text.empty() || text.size() > 18) return CursorFile::kDamaged;
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return CursorFile::kDamaged;
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  *position = value;
  return CursorFile::kText;
}

bool WriteCursorFile(FileSystem& fs, const std::string& path, const std::string& tmp_path,
                     uint64_t position) {
  thread_local std::string record;
  record.clear();
  EncodeRecord(position, kCursorTag, {}, record);
  const int fd = fs.Open(tmp_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return false;
  const bool written = fs.WriteAll(fd, record) == 0;
  fs.Close(fd);
  if (written && fs.Rename(tmp_path, path) == 0) return true;
  fs.Unlink(tmp_path);
  return false;
}

}  // namespace seedance::storage
