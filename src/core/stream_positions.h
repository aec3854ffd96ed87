// StreamPositions: where each stream read by position stands in the checkpoint, committed in
// the same append as the state its events changed (PositionCheckpoint in
// seedance/plugin_context.h): a file of the tail source, or a request of the http source
// named by an idempotency key (its position: how many of its events are committed).
//
// Checkpoint component "positions": key "<source>\n<stream key>", value [u64 offset]
// [u32 head CRC-32C][u32 head bytes][i64 expiry, wall-clock ns; 0: none]. Per batch, the last
// position noted for a stream is the one committed (a stream's events are taken in order); a
// stream opened after a truncation of the same file (a newer epoch) wins over positions of
// the older one still in flight. Records with an expiry are deleted once it has passed, and
// beyond kMaxExpiring of them the soonest to expire go first.
//
// Thread-safe: Open/SetHead/CloseStream/ReleaseStream/Find on the event loop,
// Restore/Note/Commit on the processing thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "seedance/plugin_context.h"
#include "storage/checkpoint_log.h"

namespace seedance {

class StreamPositions final : public PositionCheckpoint {
 public:
  static constexpr const char* kComponent = "positions";
  static constexpr size_t kMaxExpiring = 100'000;

  // `now_ns`: the wall clock (tests pass their own).
  explicit StreamPositions(std::function<int64_t()> now_ns = nullptr);

  void Activate() { active_ = true; }
  bool active() const override { return active_; }
  // At start, before sources run.
  void Restore(const storage::CheckpointLog::Entries& entries);
  // An event of this batch ended at `end` in `stream`.
  void Note(uint32_t stream, uint64_t end);
  // Writes the positions noted since the last commit, and deletes closed and expired records.
  void Commit(storage::CheckpointLog& log);

  uint32_t OpenStream(const std::string& source, const std::string& key,
                      std::chrono::nanoseconds keep = std::chrono::nanoseconds(0)) override;
  void ReleaseStream(uint32_t stream) override;
  void SetHead(uint32_t stream, uint32_t head_crc, uint32_t head_bytes) override;
  void CloseStream(uint32_t stream) override;
  bool Find(const std::string& source, const std::string& key, Committed* out) const override;

  size_t records() const;

 private:
  struct Stream {
    std::string record;  // "<source>\n<stream key>"
    uint64_t epoch = 0;
    uint32_t head_crc = 0;
    uint32_t head_bytes = 0;
    int64_t keep_ns = 0;
  };
  struct Record {
    Committed committed;
    uint64_t epoch = 0;      // of the stream that wrote it (this run)
    int64_t expires_ns = 0;  // 0: kept until closed
  };

  void Delete(const std::string& record, storage::CheckpointLog& log);

  std::function<int64_t()> now_ns_;
  mutable std::mutex mu_;
  bool active_ = false;
  uint32_t next_stream_ = 1;                          // 0 is "none"
  std::unordered_map<uint32_t, Stream> streams_;      // open handles
  std::map<std::string, uint64_t> epochs_;            // record → newest epoch opened
  std::map<std::string, Record> records_;             // record → committed
  std::multimap<int64_t, std::string> expiries_;      // expiry → record (stale ones skipped)
  std::vector<std::pair<uint32_t, uint64_t>> noted_;  // this batch, in order
  std::vector<std::string> to_delete_;
};

}  // namespace seedance
