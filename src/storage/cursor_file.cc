#include "storage/cursor_file.h"

#include <fcntl.h>

#include <cstring>
#include <string_view>

#include "storage/log_format.h"
#include "storage/record_scanner.h"

namespace seedance::storage {
namespace {

constexpr uint8_t kCursorTag = 0;
// Positions beyond this are damage: sequence numbers must have room to grow.
constexpr uint64_t kMaxPosition = uint64_t{1} << 62;
constexpr size_t kGenerationBytes = 8;
// A slot's record: the header and the generation.
constexpr size_t kSlotRecordBytes = kHeaderSize + kGenerationBytes;
constexpr size_t kMaxFileBytes = kCursorSlotStride + kSlotRecordBytes;

struct Slot {
  bool valid = false;
  uint64_t position = 0;
  uint64_t generation = 0;
};

// The slot whose record starts at `offset` of `bytes`. At offset 0 an empty payload is the
// form written by earlier builds (one record, the whole file): generation 0.
Slot ReadSlot(std::string_view bytes, size_t offset) {
  Slot slot;
  if (offset >= bytes.size()) return slot;
  size_t pos = offset;
  ScannedRecord record;
  size_t skipped = 0;
  if (ScanRecord(bytes, &pos, &record, &skipped) != ScanResult::kRecord ||
      record.offset != offset || record.tag != kCursorTag || record.sequence > kMaxPosition) {
    return slot;
  }
  if (record.payload.size() == kGenerationBytes) {
    uint8_t le[kGenerationBytes];
    std::memcpy(le, record.payload.data(), kGenerationBytes);
    for (size_t i = 0; i < kGenerationBytes; ++i) slot.generation |= uint64_t{le[i]} << (8 * i);
  } else if (!(offset == 0 && record.payload.empty())) {
    return slot;
  }
  slot.valid = true;
  slot.position = record.sequence;
  return slot;
}

// ReadCursorFile, and which slot was the newest (0 or 1; 0 for the older forms).
CursorFile ReadNewest(FileSystem& fs, const std::string& path, uint64_t* position,
                      uint64_t* generation, int* slot_index, std::string* why) {
  auto data = fs.ReadFile(path, kMaxFileBytes);
  if (!data) {
    if (data.error().code() == StatusCode::kNotFound) return CursorFile::kMissing;
    if (data.error().code() == StatusCode::kDataLoss) return CursorFile::kDamaged;  // too long
    if (why != nullptr) *why = data.error().message();
    return CursorFile::kUnreadable;
  }
  const std::string& bytes = *data;
  const Slot first = ReadSlot(bytes, 0);
  const Slot second = ReadSlot(bytes, kCursorSlotStride);
  if (first.valid || second.valid) {
    const Slot& newest =
        !second.valid || (first.valid && first.generation > second.generation) ? first : second;
    *position = newest.position;
    *generation = newest.generation;
    *slot_index = &newest == &first ? 0 : 1;
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
  *generation = 0;
  *slot_index = 0;
  return CursorFile::kText;
}

}  // namespace

CursorFile ReadCursorFile(FileSystem& fs, const std::string& path, uint64_t* position,
                          uint64_t* generation, std::string* why) {
  uint64_t unused_generation = 0;
  int unused_slot = 0;
  return ReadNewest(fs, path, position, generation ? generation : &unused_generation, &unused_slot,
                    why);
}

CursorWriter::CursorWriter(FileSystem& fs, std::string path) : fs_(fs), path_(std::move(path)) {
  record_.reserve(kSlotRecordBytes);
}

CursorWriter::~CursorWriter() {
  if (fd_ >= 0) fs_.Close(fd_);
}

bool CursorWriter::Write(uint64_t position) {
  if (next_generation_ == 0) {
    // Continue after the newest slot in the file, overwriting the other one first: the newest
    // stays as it is until a newer one is whole.
    uint64_t saved = 0, generation = 0;
    int newest = 1;  // no file: the first write goes to slot 0
    const CursorFile found = ReadNewest(fs_, path_, &saved, &generation, &newest, nullptr);
    if (found == CursorFile::kUnreadable) return false;  // its slots unknown: read again next time
    if (found != CursorFile::kOk && found != CursorFile::kText) newest = 1;
    next_generation_ = found == CursorFile::kOk ? generation + 1 : 1;
    next_slot_ = 1 - newest;
    // A damaged file longer than two slots reads as damaged whatever its slots hold: emptied,
    // so that the first save repairs it.
    truncate_ = found == CursorFile::kDamaged;
  }
  if (fd_ < 0) {
    fd_ = fs_.Open(path_, O_WRONLY | O_CREAT | (truncate_ ? O_TRUNC : 0), 0644);
    if (fd_ < 0) return false;
    truncate_ = false;
  }
  char le[kGenerationBytes];
  for (size_t i = 0; i < kGenerationBytes; ++i) {
    le[i] = static_cast<char>((next_generation_ >> (8 * i)) & 0xff);
  }
  record_.clear();
  EncodeRecord(position, kCursorTag, std::string_view(le, sizeof le), record_);
  const off_t offset = static_cast<off_t>(next_slot_ * kCursorSlotStride);
  if (fs_.PWriteAll(fd_, record_, offset) != 0) {
    fs_.Close(fd_);  // reopened by the next try (the file may have been replaced meanwhile)
    fd_ = -1;
    return false;
  }
  ++next_generation_;
  next_slot_ = 1 - next_slot_;
  return true;
}

}  // namespace seedance::storage
