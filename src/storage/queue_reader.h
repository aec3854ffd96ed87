// QueueReader: reads the durable queue's records in sequence order from a start sequence,
// following the writer (records flushed later are returned by later calls).
//
// Corrupt records are skipped and counted (skipped_records()); the reader never fails on
// bad bytes. When the segment it is reading was deleted (drop-oldest), it continues with the
// oldest retained one. Not thread-safe: one reader per consumer; the QueueLog it reads must
// outlive it.
#pragma once

#include <cstdint>
#include <string>

#include "storage/queue_log.h"

namespace seedance::storage {

class QueueReader {
 public:
  QueueReader(const QueueLog& log, uint64_t start_sequence);
  ~QueueReader();
  QueueReader(const QueueReader&) = delete;
  QueueReader& operator=(const QueueReader&) = delete;

  // The next record with sequence >= the start sequence. Returns false when none is
  // available yet. `payload` is valid until the next call.
  bool Next(uint64_t* sequence, uint8_t* tag, std::string_view* payload);

  uint64_t skipped_records() const { return skipped_records_; }
  uint64_t skipped_bytes() const { return skipped_bytes_; }

 private:
  bool OpenSegmentFor(uint64_t sequence);
  bool ReadMore(uint64_t limit);

  const QueueLog& log_;
  uint64_t next_wanted_;
  uint64_t segment_first_ = 0;
  bool have_segment_ = false;
  int fd_ = -1;
  uint64_t file_offset_ = 0;  // bytes of the segment read into buffer_ so far
  std::string buffer_;
  size_t pos_ = 0;
  uint64_t skipped_records_ = 0;
  uint64_t skipped_bytes_ = 0;
};

}  // namespace seedance::storage
