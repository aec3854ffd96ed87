// RedeliveryGuard: keeps a restart from counting a message twice in processor state.
//
// A batch is acknowledged upstream only after its effects (queue records, window state) are
// committed. If the process dies between that commit and the broker receiving the PUBACK,
// the broker redelivers the message after the restart: with the same packet identifier and
// the DUP flag set (MQTT 3.1.1 §4.4, 5.0 §4.4, persistent sessions). The pipeline records
// the packet ids of every committed batch in the checkpoint (kept 10 s, far longer than a
// PUBACK takes to leave); after a restart, a DUP message whose id is in that record is
// acknowledged and dropped instead of being processed again. A message without DUP that
// reuses an id means the old one was acknowledged: the id is forgotten and it is processed.
//
// Used only by pipelines with stateful processors (windows); elsewhere a redelivered
// message is an at-least-once duplicate, as documented.
//
// Thread-safe: Restore/Commit on the processing thread, Skip on the event loop.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "seedance/plugin_context.h"
#include "storage/checkpoint_log.h"

namespace seedance {

class RedeliveryGuard final : public RedeliveryFilter {
 public:
  static constexpr const char* kComponent = "redelivery";
  static constexpr int64_t kKeepNs = 10'000'000'000;

  // Rebuilds the set from the checkpoint's entries (at start, before sources run).
  void Restore(const storage::CheckpointLog::Entries& entries, int64_t now_ns);
  // Records the packet ids of a committed batch, and forgets batches older than kKeepNs.
  void Commit(const std::map<std::string, std::vector<uint16_t>>& ids_by_source, int64_t now_ns,
              storage::CheckpointLog& log);
  // True when the message was committed before a restart: acknowledge it, do not process it.
  bool Skip(const std::string& source, uint16_t packet_id, bool dup) override;

  size_t suppressed() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::set<uint16_t>> restored_;  // by source
  struct Batch {
    int64_t at_ns;
    std::string key;
  };
  std::deque<Batch> batches_;  // written to the log, oldest first
  uint64_t next_batch_ = 0;
  size_t suppressed_ = 0;
};

}  // namespace seedance
