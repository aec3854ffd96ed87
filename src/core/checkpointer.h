// Checkpointer: the state of stateful processors (windows, watermarks), the redelivery
// guard's packet ids and the read positions of position-read sources (tail), in
// <data_dir>/checkpoint (storage::CheckpointLog).
//
// At start it restores every stateful processor from the log (a processor refusing its state
// is kDataLoss, naming the processor and key) and reports damaged or missing records
// (`seedance_checkpoint_lost_records_total`, one error line). The bytes it writes are counted
// in `seedance_checkpoint_written_bytes_total` (what a flash card's wear follows). After each
// batch, before the batch is acknowledged upstream, Save() commits the state the batch changed and
// the ids of redeliverable messages it took in; a failed commit is retried (logged at most every 10
// s) until the caller's deadline, and then Save() returns false: that batch must stay
// unacknowledged. Processing thread only.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/redelivery_guard.h"
#include "core/stream_positions.h"
#include "observe/metrics.h"
#include "seedance/processor.h"
#include "seedance/result.h"
#include "storage/checkpoint_log.h"
#include "util/log.h"

namespace seedance {

class Checkpointer {
 public:
  struct Stateful {
    std::string name;  // the processor's name in the config
    Processor* processor;
  };

  static Result<std::unique_ptr<Checkpointer>> Open(const storage::QueueSettings& queue,
                                                    std::vector<Stateful> processors,
                                                    RedeliveryGuard& redelivery,
                                                    StreamPositions& positions,
                                                    observe::MetricsRegistry& metrics);

  // An event of this batch came with redelivery id `id` (a broker packet id) from `source`.
  void NoteRedelivery(const std::string& source, uint16_t id) { batch_ids_[source].push_back(id); }
  // An event of this batch ended at `end` in a position-read stream (tail).
  void NotePosition(uint32_t stream, uint64_t end) { positions_.Note(stream, end); }
  // Commits what the batch changed. Retries every 100 ms while `past_deadline()` is false;
  // false when it gave up.
  bool Save(const std::function<bool()>& past_deadline);
  // Periodic work of the log (interval fsync).
  void Tick() { log_->Tick(); }

 private:
  Checkpointer(std::unique_ptr<storage::CheckpointLog> log, std::vector<Stateful> processors,
               RedeliveryGuard& redelivery, StreamPositions& positions, observe::Counter& written);

  std::unique_ptr<storage::CheckpointLog> log_;
  std::vector<Stateful> processors_;
  RedeliveryGuard& redelivery_;
  StreamPositions& positions_;
  std::map<std::string, std::vector<uint16_t>> batch_ids_;  // by source, this batch
  util::LogLimiter log_limiter_;
  observe::Counter& written_;
  uint64_t written_counted_ = 0;  // of log_->bytes_written()
};

}  // namespace seedance
