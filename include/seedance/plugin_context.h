// PluginContext: what the runtime hands a plugin's Create(): its name, the event loop,
// metrics, the clock, and two small interfaces to the runtime (RedeliveryFilter,
// MemoryAccount). Plugins take time and metrics from here, never from globals, and reach the
// runtime's core only through this header: the build gives them no other way in.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "seedance/result.h"

namespace seedance {

class EventLoop;        // util/event_loop.h
struct ComponentStats;  // observe/component_stats.h
namespace observe {
class MetricsRegistry;  // observe/metrics.h
}

// Sources whose upstream sends a message again until it has our acknowledgement (MQTT QoS
// 1/2: after a reconnect, with DUP set) ask it whether a message's effect is already
// committed (pipelines with stateful processors: counting it again would change their
// state). The rule is core/redelivery_guard.h's. Thread-safe.
class RedeliveryFilter {
 public:
  enum class Verdict {
    kNew,         // process it; it is registered as in the pipeline under its packet id
    kCommitted,   // its first copy is committed: acknowledge this one now, do not emit it
    kInPipeline,  // its first copy is still being processed: do not emit this one; the
                  // pipeline calls `ack_when_committed` once the first copy is committed
  };
  virtual ~RedeliveryFilter() = default;
  // False when the pipeline keeps no state that a redelivery would change (no stateful
  // processors): sources then need not ask. Known before sources start.
  virtual bool active() const = 0;
  // Before a QoS 1/2 message (`dup`: sent again; `fingerprint`: of its topic and payload) is
  // emitted.
  virtual Verdict Admit(const std::string& source, uint16_t packet_id, bool dup,
                        uint64_t fingerprint, const std::function<void()>& ack_when_committed) = 0;
  // A kNew message that the pipeline refused after all (it is offered again later).
  virtual void Withdraw(const std::string& source, uint16_t packet_id) = 0;
  // The broker has processed our acknowledgements of these ids (its PINGRESP to a PINGREQ
  // sent after them): it will not send those messages again.
  virtual void Confirmed(const std::string& source, const std::vector<uint16_t>& packet_ids) = 0;
  // Whether messages of `source` were committed and their acknowledgement not yet confirmed
  // (a broker that then answers with a new session lost what was in flight).
  virtual bool HasUnconfirmed(const std::string& source) const = 0;
};

// Sources that read files by position (tail), in pipelines with stateful processors: the
// position past each event (AckHandle::stream, stream_end) goes into the checkpoint commit
// that holds the state the event changed, so after a kill the source resumes exactly where
// that state ends. Thread-safe; core/stream_positions.h implements it.
class PositionCheckpoint {
 public:
  struct Committed {
    uint64_t offset = 0;      // just past the last event whose effect is committed
    uint32_t head_crc = 0;    // CRC-32C of the file's first head_bytes bytes then
    uint32_t head_bytes = 0;  // (tells a file that reuses the inode from the one committed)
  };
  virtual ~PositionCheckpoint() = default;
  // False when the pipeline keeps no state (no stateful processors): not used then. Known
  // before sources start.
  virtual bool active() const = 0;
  // A stream to name in AckHandle::stream: one per file (`key`: its identity) and content
  // epoch; open a new one when the file is truncated (positions of the older one committed
  // after that are ignored). With `keep` > 0 the record is deleted that long after its last
  // commit (HTTP idempotency keys); otherwise it stays until CloseStream.
  virtual uint32_t OpenStream(const std::string& source, const std::string& key,
                              std::chrono::nanoseconds keep = std::chrono::nanoseconds(0)) = 0;
  // Forgets the handle (nothing of the stream is in the pipeline any more); the record stays.
  virtual void ReleaseStream(uint32_t stream) = 0;
  // The stream's file starts with these bytes (as far as read).
  virtual void SetHead(uint32_t stream, uint32_t head_crc, uint32_t head_bytes) = 0;
  // The file is let go, everything read from it committed: its record is deleted.
  virtual void CloseStream(uint32_t stream) = 0;
  // What the checkpoint holds for the file `key` of `source`.
  virtual bool Find(const std::string& source, const std::string& key, Committed* out) const = 0;
};

// The pipeline's memory budget (`limits.memory`): what a plugin holds for events beyond
// small pooled buffers is charged here and credited back when freed. Thread-safe.
class MemoryAccount {
 public:
  // Buffers kept for reuse stay under this size: pooled memory is not counted, so a buffer
  // a large event grew is given back once the event moved on.
  static constexpr uint64_t kPooledBufferBytes = 16 * 1024;

  virtual ~MemoryAccount() = default;
  virtual void Charge(uint64_t bytes) = 0;
  virtual void Credit(uint64_t bytes) = 0;
};

// Small files a plugin keeps across restarts under the data directory (the tail source's
// positions), each read whole and replaced whole, never half written. storage/state_files.h
// implements it over storage::FileSystem, so the storage fault tests reach these writes too.
// Thread-safe.
class StateFiles {
 public:
  virtual ~StateFiles() = default;
  // The content of `name` (a relative path, e.g. "tail/logs.positions"); kNotFound when there
  // is none.
  virtual Result<std::string> Read(const std::string& name) = 0;
  // Replaces `name` with `content`: a temporary file beside it, fdatasync, rename, and the
  // directory synced. On an error the previous content stays.
  virtual Status Replace(const std::string& name, std::string_view content) = 0;
};

struct PluginContext {
  std::string name;           // the component's name from the config
  EventLoop* loop = nullptr;  // where sources and sinks run
  observe::MetricsRegistry* metrics = nullptr;
  ComponentStats* stats = nullptr;  // the component's standard counters
  // This job on this host: "<hostname>-<8 hex digits: CRC-32C of the absolute
  // queue.data_dir>". The same across restarts, different for two jobs on one host (one
  // process per data directory): for names a remote side must tell apart (MQTT client ids).
  std::string instance;
  // Where a plugin keeps its own state (files under queue.data_dir).
  StateFiles* state_files = nullptr;
  // The wall clock, Unix ns (tests replace it).
  std::function<int64_t()> now_ns = [] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  // True for `seedance validate`: check everything that needs no network, start nothing.
  bool validate_only = false;
  // Sources with redeliveries consult it when it is active() (pipelines with stateful
  // processors).
  RedeliveryFilter* redelivery = nullptr;
  // Sources that read by position use it when it is active() (stateful processors).
  PositionCheckpoint* positions = nullptr;
  // Sinks: the runner's `timeout` of one attempt (0: none). A sink whose protocol has no
  // answer timeout of its own bounds its waits with it (the MQTT sink's PUBACK wait).
  std::chrono::milliseconds attempt_timeout{0};
  // Set with `limits.memory`: processors charge what they hold for events here (sinks need
  // not: the sink runner charges a batch with the request built from it).
  MemoryAccount* memory = nullptr;
};

}  // namespace seedance
