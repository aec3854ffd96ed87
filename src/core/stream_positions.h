// StreamPositions: where each file read by a position-reading source (tail) stands in the
// checkpoint, committed in the same append as the state its lines changed
// (PositionCheckpoint in seedance/plugin_context.h).
//
// Checkpoint component "positions": key "<source>\n<file key>", value [u64 offset]
// [u32 head CRC-32C][u32 head bytes]. Per batch, the last position noted for a file is the
// one committed (a file's lines are taken in order); a stream opened after a truncation of the
// same file (a newer epoch) wins over positions of the older one still in flight.
//
// Thread-safe: Open/SetHead/CloseStream/Find on the event loop, Restore/Note/Commit on the
// processing thread.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "seedance/plugin_context.h"
#include "storage/checkpoint_log.h"

namespace seedance {

class StreamPositions final : public PositionCheckpoint {
 public:
  static constexpr const char* kComponent = "positions";

  void Activate() { active_ = true; }
  bool active() const override { return active_; }
  // At start, before sources run.
  void Restore(const storage::CheckpointLog::Entries& entries);
  // An event of this batch ended at `end` in `stream`.
  void Note(uint32_t stream, uint64_t end);
  // Writes the positions noted since the last commit, and the deletions of closed streams.
  void Commit(storage::CheckpointLog& log);

  uint32_t OpenStream(const std::string& source, const std::string& key) override;
  void SetHead(uint32_t stream, uint32_t head_crc, uint32_t head_bytes) override;
  void CloseStream(uint32_t stream) override;
  bool Find(const std::string& source, const std::string& key, Committed* out) const override;

 private:
  struct Stream {
    std::string record;  // "<source>\n<file key>"
    uint64_t epoch = 0;
    uint32_t head_crc = 0;
    uint32_t head_bytes = 0;
    bool closed = false;
  };
  struct Record {
    Committed committed;
    uint64_t epoch = 0;  // of the stream that wrote it (this run)
  };

  mutable std::mutex mu_;
  bool active_ = false;
  std::vector<Stream> streams_{1};             // by stream id; 0 is "none"
  std::map<std::string, uint64_t> epochs_;     // record → newest epoch opened
  std::map<std::string, Record> records_;      // record → committed (or to be)
  std::vector<std::pair<uint32_t, uint64_t>> noted_;  // this batch, in order
  std::vector<std::string> to_delete_;
};

}  // namespace seedance
