// RedeliveryGuard: keeps a broker's redelivery from counting a message twice in processor
// state (windows), across kill -9 and across reconnects.
//
// A batch is acknowledged upstream only after its effects (queue records, window state) are
// committed. Until the broker has processed our PUBACK (PUBREC at QoS 2) it may send the
// message again, on any later connection: with the same packet identifier and DUP set
// (MQTT 3.1.1 and 5.0 §3.3.1.1, §4.4). The rule, per source:
//
//   - A packet id whose message was committed stays *unconfirmed* — in the checkpoint, in the
//     same commit as the state it changed — until the broker has provably processed our
//     acknowledgement of it: the client sends a PINGREQ after its PUBACKs, and the broker's
//     PINGRESP, answered in order, confirms every acknowledgement written before it
//     (Confirmed()). An id is also released when the broker uses it for a new message (a
//     PUBLISH without DUP: it may reuse an id only once our PUBACK reached it).
//   - A PUBLISH with DUP whose id is unconfirmed and whose fingerprint (CRC-32C of topic and
//     payload, and the payload's length) matches the committed message is that message again:
//     acknowledged, not processed (kCommitted). It stays unconfirmed until its new PUBACK is
//     confirmed, so a second redelivery after a second kill is recognised too.
//   - A PUBLISH with DUP whose first copy is still in the pipeline (it came on a connection
//     that dropped before the copy was committed) is not processed either; it is acknowledged
//     once the first copy's batch is committed (kInPipeline, TakeReadyAcks()).
//   - Anything else is processed (kNew): a DUP whose fingerprint differs is a new message
//     whose first transmission never reached us.
//
// What it needs from the broker: a session that survives the connection (persistent_session,
// the default at QoS ≥ 1, with a client id that is the same at every start, the default).
// Without one the broker sends nothing again: messages in flight at a kill are lost, not
// doubled (the MQTT source warns at start and when a broker answers with a new session).
// What it cannot tell apart: a new message with the same id, topic and payload as an
// unconfirmed one whose first transmission was lost (it is taken for the redelivery).
//
// Bounded: at most one unconfirmed entry per packet id and source (65,535).
//
// Thread-safe: Restore/Commit/TakeReadyAcks on the processing thread, Admit/Withdraw/Confirmed
// on the event loop.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "seedance/plugin_context.h"
#include "storage/checkpoint_log.h"

namespace seedance {

class RedeliveryGuard final : public RedeliveryFilter {
 public:
  // Checkpoint component of the batch records: key "<source>\n<batch number>", value
  // [u16 packet id][u64 fingerprint]... for the ids of the batch still unconfirmed.
  static constexpr const char* kComponent = "mqtt_packets";
  // The records written before fingerprints and confirmations: key "<source>\n<batch>",
  // value [i64 commit time][u16 packet id]...; restored with any fingerprint matching.
  static constexpr const char* kLegacyComponent = "redelivery";
  static constexpr uint64_t kAnyFingerprint = 0;

  // The pipeline has stateful processors (before sources start).
  void Activate() { active_ = true; }
  bool active() const override { return active_; }
  // Rebuilds the unconfirmed ids from the checkpoint (at start, before sources run).
  void Restore(const storage::CheckpointLog::Entries& entries);
  // Records the packet ids of a committed batch as unconfirmed (with the fingerprints Admit
  // saw), and writes what confirmations released since the last commit.
  void Commit(const std::map<std::string, std::vector<uint16_t>>& ids_by_source,
              storage::CheckpointLog& log);
  // The acknowledgements of kInPipeline copies whose first copy the last Commit() committed.
  // Run them after the batch's own acknowledgements.
  std::vector<std::function<void()>> TakeReadyAcks();

  Verdict Admit(const std::string& source, uint16_t packet_id, bool dup, uint64_t fingerprint,
                const std::function<void()>& ack_when_committed) override;
  void Withdraw(const std::string& source, uint16_t packet_id) override;
  void Confirmed(const std::string& source, const std::vector<uint16_t>& packet_ids) override;
  bool HasUnconfirmed(const std::string& source) const override;

  size_t suppressed() const;     // redeliveries recognised (kCommitted and kInPipeline)
  size_t unconfirmed() const;    // ids committed and not yet confirmed, all sources
  size_t batch_records() const;  // checkpoint records holding them

 private:
  struct InPipeline {
    uint64_t fingerprint;
    std::vector<std::function<void()>> acks;  // of copies that came meanwhile
  };
  struct Unconfirmed {
    uint64_t fingerprint;
    uint64_t batch;  // the checkpoint record holding it
  };
  struct SourceState {
    std::unordered_map<uint16_t, InPipeline> in_pipeline;
    std::unordered_map<uint16_t, Unconfirmed> unconfirmed;
  };
  struct BatchRecord {
    std::string component;
    std::string key;
    size_t live;  // its ids still unconfirmed
  };

  // Drops `id`'s unconfirmed entry; its batch record is deleted once none is left.
  void Release(SourceState& s, uint16_t id);

  mutable std::mutex mu_;
  std::map<std::string, SourceState, std::less<>> sources_;
  std::map<uint64_t, BatchRecord> batches_;
  std::vector<std::pair<std::string, std::string>> to_delete_;  // (component, key)
  std::vector<std::function<void()>> ready_acks_;
  uint64_t next_batch_ = 0;
  size_t suppressed_ = 0;
  bool active_ = false;
};

}  // namespace seedance
