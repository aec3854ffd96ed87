#include "core/checkpointer.h"

#include <fmt/format.h>

#include "core/commit_retry.h"

namespace seedance {

Checkpointer::Checkpointer(std::unique_ptr<storage::CheckpointLog> log,
                           std::vector<Stateful> processors, RedeliveryGuard& redelivery,
                           StreamPositions& positions, observe::Counter& written)
    : log_(std::move(log)),
      processors_(std::move(processors)),
      redelivery_(redelivery),
      positions_(positions),
      written_(written) {}

Result<std::unique_ptr<Checkpointer>> Checkpointer::Open(const storage::QueueSettings& q,
                                                         std::vector<Stateful> processors,
                                                         RedeliveryGuard& redelivery,
                                                         StreamPositions& positions,
                                                         observe::MetricsRegistry& metrics) {
  using Fsync = storage::CheckpointLog::Fsync;
  const Fsync fsync = q.fsync.mode == storage::QueueSettings::Fsync::kAlways  ? Fsync::kAlways
                      : q.fsync.mode == storage::QueueSettings::Fsync::kNever ? Fsync::kNever
                                                                              : Fsync::kInterval;
  auto opened = storage::CheckpointLog::Open(q.data_dir + "/checkpoint", fsync, q.fsync.interval);
  if (!opened) return opened.error();
  std::unique_ptr<storage::CheckpointLog> log = std::move(opened).value();
  const auto& entries = log->entries();
  size_t restored = 0;
  for (const Stateful& p : processors) {
    auto it = entries.find(p.name);
    if (it == entries.end()) continue;
    for (const auto& [key, value] : it->second) {
      Status s = p.processor->RestoreState(key, value);
      if (!s.ok()) {
        return Status(
            StatusCode::kDataLoss,
            fmt::format("checkpoint of processor \"{}\": {} (key {})", p.name, s.message(), key));
      }
      ++restored;
    }
  }
  redelivery.Restore(entries);
  positions.Restore(entries);
  metrics
      .GetCounter("seedance_checkpoint_lost_records_total",
                  "Checkpoint records found damaged or missing at start (skipped).", {})
      .Add(log->lost_records());
  if (log->lost_records() > 0) {
    SEEDANCE_LOG_ERROR("checkpoint",
                       "{}/checkpoint: {} record(s) damaged or missing were skipped ({} damaged "
                       "bytes, {} bytes of torn tail cut); the state they held is lost",
                       q.data_dir, log->lost_records(), log->damaged_bytes(),
                       log->truncated_bytes());
  }
  SEEDANCE_LOG_INFO("checkpoint",
                    "state of stateful processors in {}/checkpoint: {} entr{} restored{}",
                    q.data_dir, restored, restored == 1 ? "y" : "ies",
                    log->truncated_tail() ? " (torn tail truncated)" : "");
  observe::Counter& written =
      metrics.GetCounter("seedance_checkpoint_written_bytes_total",
                         "Bytes written to the checkpoint log (commits and compactions).", {});
  return std::unique_ptr<Checkpointer>(
      new Checkpointer(std::move(log), std::move(processors), redelivery, positions, written));
}

bool Checkpointer::Save(const std::function<bool()>& past_deadline) {
  for (const Stateful& p : processors_) {
    p.processor->TakeChangedState(
        [&](std::string_view key, std::string_view value) { log_->Put(p.name, key, value); });
  }
  redelivery_.Commit(batch_ids_, *log_);
  batch_ids_.clear();
  positions_.Commit(*log_);
  const bool committed = CommitUntilDeadline([this] { return log_->Commit(); }, past_deadline,
                                             "checkpoint", "the checkpoint", log_limiter_);
  written_.Add(log_->bytes_written() - written_counted_);
  written_counted_ = log_->bytes_written();
  if (!committed) return false;
  // Copies of messages that were still in the pipeline when they came again: their first
  // copies are committed now.
  for (const auto& ack : redelivery_.TakeReadyAcks()) ack();
  return true;
}

}  // namespace seedance
