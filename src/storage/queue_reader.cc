#include "storage/queue_reader.h"

#include <fcntl.h>

#include <cerrno>

#include "storage/record_scanner.h"
#include "util/scratch_buffer.h"

namespace seedance::storage {
namespace {
constexpr size_t kReadChunk = 256 * 1024;  // bytes read from a segment at a time
}  // namespace

QueueReader::QueueReader(const QueueLog& log, uint64_t start_sequence)
    : log_(log), fs_(log.fs()), next_wanted_(start_sequence), open_for_(start_sequence) {}

QueueReader::~QueueReader() { CloseSegment(); }

void QueueReader::CloseSegment() {
  if (fd_ >= 0) fs_.Close(fd_);
  fd_ = -1;
  have_segment_ = false;
}

bool QueueReader::OpenSegmentFor(uint64_t sequence) {
  open_for_ = sequence;
  auto segments = log_.Segments();
  if (segments.empty()) return false;
  // The last segment whose first sequence is <= sequence; the oldest when all are newer.
  size_t idx = 0;
  for (size_t i = 0; i < segments.size(); ++i) {
    if (segments[i].first_sequence <= sequence) idx = i;
  }
  if (have_segment_ && segments[idx].first_sequence == segment_first_) return true;
  CloseSegment();
  fd_ = fs_.Open(segments[idx].path, O_RDONLY, 0);
  have_segment_ = fd_ >= 0;
  if (!have_segment_) error_ = errno;
  segment_first_ = segments[idx].first_sequence;
  file_offset_ = 0;
  buffer_.clear();
  pos_ = 0;
  return have_segment_;
}

QueueReader::Read QueueReader::ReadMore(uint64_t limit) {
  if (pos_ > 0) {
    buffer_.erase(0, pos_);
    pos_ = 0;
    // A large record grew the buffer; once it is read, the storage goes back (also when the
    // reader has caught up and waits: that is when it would otherwise stay held).
    util::ReleaseIfLarger(buffer_, 2 * kReadChunk);
  }
  if (file_offset_ >= limit) return Read::kEnd;
  size_t want = static_cast<size_t>(std::min<uint64_t>(limit - file_offset_, kReadChunk));
  size_t old = buffer_.size();
  buffer_.resize(old + want);
  ssize_t n;
  do {
    n = fs_.PRead(fd_, buffer_.data() + old, want, static_cast<off_t>(file_offset_));
  } while (n < 0 && errno == EINTR);
  if (n <= 0) {
    if (n < 0) error_ = errno;
    buffer_.resize(old);
    return n < 0 ? Read::kError : Read::kEnd;
  }
  buffer_.resize(old + static_cast<size_t>(n));
  file_offset_ += static_cast<uint64_t>(n);
  return Read::kMore;
}

bool QueueReader::Next(uint64_t* sequence, uint8_t* tag, std::string_view* payload) {
  const uint64_t oldest = log_.first_sequence();
  if (next_wanted_ < oldest) {  // deleted at the disk limit (drop_oldest)
    gaps_.push_back(SequenceGap{next_wanted_, oldest - 1, LossReason::kDropped});
    next_wanted_ = oldest;
  }
  error_ = 0;
  if (!have_segment_ && !OpenSegmentFor(std::max(next_wanted_, open_for_))) return false;
  while (true) {
    ScannedRecord r;
    size_t skipped = 0;
    ScanResult s = ScanRecord(buffer_, &pos_, &r, &skipped);
    if (s == ScanResult::kRecord) {
      if (r.sequence < next_wanted_) continue;
      if (r.sequence > next_wanted_) {
        gaps_.push_back(SequenceGap{next_wanted_, r.sequence - 1, LossReason::kCorrupt});
      }
      next_wanted_ = r.sequence + 1;
      *sequence = r.sequence;
      *tag = r.tag;
      *payload = r.payload;
      return true;
    }
    if (s == ScanResult::kCorruption) {
      damaged_bytes_ += skipped;
      continue;
    }
    // Need more bytes: from this segment if it has them, else move to the next segment.
    const QueueLog::SegmentPosition at = log_.Locate(segment_first_);
    uint64_t limit = at.found ? at.size : file_offset_;
    if (!at.found && at.any) {
      // Our segment was deleted under us (drop-oldest, or an emptied active segment that
      // restarted at a later sequence): continue with what is retained.
      CloseSegment();
      if (at.oldest_first > segment_first_) next_wanted_ = std::max(next_wanted_, at.oldest_first);
      if (!OpenSegmentFor(next_wanted_)) return false;
      continue;
    }
    const Read read = ReadMore(limit);
    if (read == Read::kMore) continue;
    if (read == Read::kError) return false;   // tried again from here by the next call
    if (at.found && at.active) return false;  // caught up with the writer
    if (!at.has_next) {
      // Segment gone and nothing newer is known yet.
      return false;
    }
    if (pos_ < buffer_.size()) {  // bytes at the end of a closed segment that form no record
      damaged_bytes_ += buffer_.size() - pos_;
    }
    CloseSegment();
    if (!OpenSegmentFor(std::max(next_wanted_, at.next_first))) return false;
  }
}

}  // namespace seedance::storage
