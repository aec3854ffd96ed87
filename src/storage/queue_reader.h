// QueueReader: reads the durable queue's records in sequence order from a start sequence,
// following the writer (records flushed later are returned by later calls).
//
// Damaged bytes are skipped (damaged_bytes()); the reader never fails on bad bytes. Records
// the log should hold and does not (a sequence gap behind damage, a lost segment) are
// collected as gaps for the caller to report (TakeGaps). When the segment it is reading was
// deleted (drop-oldest), it continues with the oldest retained one; records dropped that way
// are not gaps (the queue counts them when it drops them). A segment that cannot be opened or
// read (out of descriptors, EIO) is neither damage nor the end: Next() returns false with
// error() set, and the next call tries again from the same record. Not thread-safe: one
// reader per consumer; the QueueLog it reads must outlive it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "storage/queue_log.h"

namespace seedance::storage {

class QueueReader {
 public:
  QueueReader(const QueueLog& log, uint64_t start_sequence);
  ~QueueReader();
  QueueReader(const QueueReader&) = delete;
  QueueReader& operator=(const QueueReader&) = delete;

  // The next record with sequence >= the start sequence. Returns false when none is
  // available yet, or when error() says why it could not be read. `payload` is valid until
  // the next call.
  bool Next(uint64_t* sequence, uint8_t* tag, std::string_view* payload);
  // 0, or the errno of the open or read that stopped the last Next() (EMFILE, EIO, ...).
  int error() const { return error_; }

  // Sequence gaps passed since the last call (their reason is always kCorrupt here: the queue
  // tells them apart from gaps it already knows).
  bool has_gaps() const { return !gaps_.empty(); }
  std::vector<SequenceGap> TakeGaps() { return std::move(gaps_); }
  uint64_t damaged_bytes() const { return damaged_bytes_; }

 private:
  enum class Read { kMore, kEnd, kError };
  // Opens the segment holding `sequence`; false when there is none, or error_ on a failure
  // (then the next Next() opens it again).
  bool OpenSegmentFor(uint64_t sequence);
  Read ReadMore(uint64_t limit);
  void CloseSegment();

  const QueueLog& log_;
  FileSystem& fs_;
  uint64_t next_wanted_;
  uint64_t segment_first_ = 0;
  bool have_segment_ = false;
  uint64_t open_for_ = 0;  // the sequence whose segment is opened when none is open
  int fd_ = -1;
  int error_ = 0;
  uint64_t file_offset_ = 0;  // bytes of the segment read into buffer_ so far
  std::string buffer_;
  size_t pos_ = 0;
  uint64_t damaged_bytes_ = 0;
  std::vector<SequenceGap> gaps_;
};

}  // namespace seedance::storage
