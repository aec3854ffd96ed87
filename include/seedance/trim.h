// seedance::trim — keep fast memory (GPU memory, or RAM under a budget) low by moving idle
// buffers to a cheaper tier and bringing them back on access (DESIGN.md section 4).
//
// A TierManager owns buffers placed on an ordered list of tiers, fastest first. A program
// registers its buffers, Acquire()s one to get a pointer valid on the fastest tier until
// Release(), and calls Step() once per iteration; when a trigger fires (occupancy, idle share,
// fragmentation; see PolicyOptions) idle buffers move down a tier. An acquired buffer is never
// moved. Periodic use is learned per buffer (two equal gaps between bursts of use) and the
// buffer is brought back ahead of its use: one step, or as many as its copy takes. No CUDA
// types appear here: the CUDA tiers implement Tier in src/trim/cuda.
//
// Thread-compatible: one thread (or external locking) per TierManager. The C API
// (seedance/trim_c.h) locks for you.
//
// The release contract (what makes a move safe while the program computes): Release(id)
// promises that every piece of work that uses the buffer has been issued — a CPU write is
// done; a GPU kernel or copy may still be queued or running. A tier orders each move after
// that work: the CUDA tiers wait for every stream of the device to drain before they copy a
// buffer out or unmap its memory (a moved buffer's contents are never a half-written state).
// After Release nothing new may use the pointer until the next Acquire.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "seedance/result.h"

namespace seedance::trim {

using BufferId = uint64_t;

// The trimming policy's knobs; defaults from the article.
struct PolicyOptions {
  double occupancy_trigger = 0.92;          // fast-tier used / capacity ...
  int occupancy_samples = 3;                // ... at or above for this many consecutive steps
  double idle_share_trigger = 0.35;         // more than this share of registered bytes ...
  uint64_t idle_steps = 50;                 // ... idle for at least this many steps
  double fragmentation_trigger = 0.28;      // 1 − largest free block / total free, above
  uint64_t min_victim_bytes = 16ull << 20;  // smaller buffers are not worth moving
  double low_watermark = 0.80;              // a trim moves buffers until occupancy is under this
  // Moves started by Step() (policy trims, learned prefetches) copy on a worker thread (for
  // the CUDA tiers: on the copy stream) while the program computes; each completes (memory
  // freed, pointer switched) at a later call. Acquire() of a buffer in flight waits for its
  // copy (a trim in flight is called off). Explicit Trim(), Prefetch() and room-making moves
  // stay synchronous.
  bool async_copies = false;
};

// Whether the program waits for a copy (a stall, a synchronous move) or computes while it runs
// (a move started by Step() with async_copies). A tier may put more into a waited one.
enum class CopyUrgency { kWaited, kBackground };

// Where a tier's bytes live: host memory (a CPU can read it: RAM, pinned memory) or device
// memory (only the device and its copy engines can).
enum class MemoryKind { kHost, kDevice };

// A place buffers can live.
class Tier {
 public:
  virtual ~Tier() = default;
  virtual MemoryKind memory() const { return MemoryKind::kHost; }
  // Whether CopyFrom() can copy out of `from` into this tier. Default: host memory only.
  // TierManager::Create refuses a stack in which neighbours cannot copy both ways.
  virtual bool CanCopyFrom(const Tier& from) const { return from.memory() == MemoryKind::kHost; }
  virtual const std::string& name() const = 0;
  virtual uint64_t capacity() const = 0;
  virtual uint64_t used() const = 0;
  // 1 − largest free block / total free bytes (0 when nothing is free).
  virtual double fragmentation() const = 0;
  // A block of at least `size` bytes. kResourceExhausted when none fits (the manager then
  // moves idle buffers off the tier and tries again); any other code is a failure that no
  // trim can cure and is returned to the caller as it is.
  virtual Result<void*> Allocate(uint64_t size) = 0;
  // Allocate() for a buffer whose address must not change: where the tier can, a block that
  // keeps its address across moves (KeepsAddress), even if it costs more room.
  virtual Result<void*> AllocateStable(uint64_t size) { return Allocate(size); }
  // REQUIRES: `p` came from Allocate() of this tier and is not freed yet.
  virtual void Free(void* p) = 0;
  // Copies `size` bytes from `src` (in `from`) to `dst` (in this tier).
  virtual Status CopyFrom(void* dst, const void* src, uint64_t size, const Tier& from,
                          CopyUrgency urgency) = 0;

  // Address-keeping blocks (CUDA virtual memory management): when a block's contents move to
  // a slower tier, the manager Evict()s it — its memory is released but its address stays
  // reserved — and Restore()s it before copying back, so pointers held elsewhere (kernels,
  // captured CUDA graphs) stay valid. Free() releases both. Default: no block keeps its address.
  virtual bool KeepsAddress(const void* /*p*/) const { return false; }
  // REQUIRES: KeepsAddress(p) and `p` is backed. Counts against used() no more.
  virtual Status Evict(void* /*p*/) {
    return Status(StatusCode::kFailedPrecondition, name() + ": blocks do not keep their address");
  }
  // REQUIRES: `p` was Evict()ed. kResourceExhausted when the tier's budget has no room.
  virtual Status Restore(void* /*p*/) {
    return Status(StatusCode::kFailedPrecondition, name() + ": blocks do not keep their address");
  }

  // The zero-block codec on moves (BufferCodec; trim/zero_block_codec.h), run by the faster
  // tier of a pair: it encodes on the way down and decodes on the way back, so only the
  // non-zero 256-byte blocks cross the link and take room on the slower tier.
  // Default (tier_codec.cc): the CPU codec, when this tier and `slower` are both host memory.
  virtual bool RunsZeroBlockCodec(const Tier& slower) const;
  // The length of the encoding of this tier's `size` bytes at `p`: one pass over them.
  virtual Result<uint64_t> ZeroBlockEncodedSize(const void* p, uint64_t size);
  // Encodes this tier's `size` bytes at `src` into `dst`, a block of exactly `encoded` bytes
  // (ZeroBlockEncodedSize) on `slower`. An error leaves the buffer as it was.
  virtual Status EncodeTo(void* dst, uint64_t encoded, const Tier& slower, const void* src,
                          uint64_t size);
  // Decodes the `encoded` bytes at `src` on `slower` into this tier's `size` bytes at `dst`.
  virtual Status DecodeFrom(void* dst, uint64_t size, const Tier& slower, const void* src,
                            uint64_t encoded);
};

// How a buffer's bytes cross to a slower tier (TierManager::SetCodec).
enum class BufferCodec {
  kNone,  // as they are (the default)
  // Through the zero-block codec when it pays: when the link time its left-out zero blocks
  // save is more than its two passes cost (CodecPays, from the link and codec rates this
  // manager measured; a dense buffer is found dense at the first word of each block and goes
  // as it is). Until a plain copy has measured the link, moves go as they are.
  kZeroBlocks,
  // Through the zero-block codec whenever the pair of tiers runs it and the encoding is
  // smaller: for room on the slower tier (it holds only the non-zero blocks), whatever the
  // link's speed.
  kZeroBlocksAlways,
};

struct TierStats {
  std::string name;
  uint64_t capacity = 0;
  uint64_t used = 0;
  uint64_t peak_used = 0;  // the most used() seen after any placement on the tier (tier 0 only)
  double occupancy = 0;
  double fragmentation = 0;
};

struct TrimStats {
  std::vector<TierStats> tiers;
  uint64_t step = 0;
  uint64_t buffers = 0;
  uint64_t registered_bytes = 0;
  double idle_share = 0;
  uint64_t trims = 0;  // trims that moved at least one buffer
  uint64_t bytes_moved_down = 0;
  uint64_t bytes_moved_up = 0;
  uint64_t bytes_down_without_copy = 0;  // of bytes_moved_down: to a kept copy (AcquireRead)
  uint64_t retained_bytes = 0;           // kept copies on slower tiers now
  uint64_t stalls = 0;                   // Acquire() calls that had to bring a buffer back first
  uint64_t prefetches = 0;               // buffers brought back ahead of a learned periodic use
  double copy_seconds =
      0;  // time spent copying between tiers (both directions); the bytes
          // copied are bytes_moved_down - bytes_down_without_copy + bytes_moved_up
  // The zero-block codec (BufferCodec): of the bytes moved (down and up), those that crossed
  // encoded; the bytes it left out (zero blocks) of those; the time its passes took (sizing,
  // encoding, decoding; not in copy_seconds); moves of codec buffers sent as they are because
  // the codec would not have paid (or the encoding was no smaller).
  uint64_t bytes_moved_encoded = 0;
  uint64_t bytes_codec_saved = 0;
  double codec_seconds = 0;
  uint64_t codec_declined = 0;
  uint64_t trim_decisions = 0;     // times victims were chosen (each trim, each room-making)
  double trim_latency_p50_us = 0;  // trim decision time (choosing victims), last 4,096
  double trim_latency_p99_us = 0;
};

class TierManager {
 public:
  // REQUIRES: at least two tiers, fastest first.
  static Result<std::unique_ptr<TierManager>> Create(std::vector<std::unique_ptr<Tier>> tiers,
                                                     PolicyOptions options = {});
  virtual ~TierManager() = default;

  // Places a new buffer of `size` bytes on the fastest tier with room (trimming idle buffers
  // to make room), else on a slower one. kResourceExhausted when no tier can hold it.
  // With `stable_address` the buffer's pointer never changes (objects elsewhere hold it, e.g.
  // a tensor wrapping the memory): it is placed on the fastest tier (Tier::AllocateStable), and
  // moved only if its block there keeps its address (Tier::KeepsAddress); otherwise it stays
  // where it is (on the CUDA tiers: blocks under 1 MiB, in the small-block range).
  // kResourceExhausted when the fastest tier cannot make room for it.
  virtual Result<BufferId> Register(uint64_t size, std::string name = {}, std::string group = {},
                                    bool stable_address = false) = 0;
  // kNotFound for an unknown id; kFailedPrecondition while acquired.
  virtual Status Unregister(BufferId id) = 0;
  // Pointer to the buffer on the fastest tier, valid until Release(); brings it back first
  // if it was moved (a stall). kResourceExhausted when the fastest tier cannot make room.
  virtual Result<void*> Acquire(BufferId id) = 0;
  // Acquire() for a caller that only reads the buffer until Release() (weights during
  // inference). A buffer brought back keeps its copy on the slower tier while it is only read
  // (like the Linux swap cache keeps clean pages), so moving it down again needs no copy; an
  // Acquire() drops that copy. The copies are dropped first when the slower tier needs room.
  // REQUIRES: nothing writes through the pointer (a write would be lost on the next move).
  virtual Result<const void*> AcquireRead(BufferId id) = 0;
  virtual Status Release(BufferId id) = 0;
  // Advances the step clock, samples the triggers and trims when one fires.
  virtual void Step() = 0;
  // How the buffer crosses to a slower tier from its next move on (default kNone).
  // kNotFound for an unknown id.
  virtual Status SetCodec(BufferId id, BufferCodec codec) = 0;
  // Brings a moved buffer back ahead of use (not counted as a stall).
  virtual Status Prefetch(BufferId id) = 0;
  // Starts bringing a moved buffer back ahead of its use: on the copy worker with async_copies
  // (returns at once; Acquire waits for the copy if it still runs, and counts no stall), else
  // now, as Prefetch. A buffer on the fast tier or already coming back is left as it is; one
  // going down is called off (it stays). kNotFound for an unknown id.
  virtual Status StartPrefetch(BufferId id) = 0;
  // Trims now to the low watermark; returns how many buffers moved.
  virtual size_t Trim() = 0;
  // Tier index the buffer is on (0 = fastest); kNotFound for an unknown id.
  virtual Result<int> TierOf(BufferId id) const = 0;
  // The buffer whose memory holds address `p`: its fast-tier block (or the address it keeps
  // while moved, Tier::KeepsAddress), or its block on the slower tier when it has no kept
  // address. kNotFound when no buffer holds it.
  virtual Result<BufferId> Lookup(const void* p) const = 0;
  virtual TrimStats Stats() const = 0;
};

// A RAM tier whose blocks keep their address across moves, like the CUDA device tier's: each
// block is its own mapping; Evict gives its pages back to the system (MADV_DONTNEED) and makes
// them inaccessible (PROT_NONE: a stray access while moved faults instead of reading stale
// data), Restore makes them accessible again. `capacity` bounds the bytes backed (pages).
// For programs whose pointers are held elsewhere (tensors wrapping the memory) and for running
// the CUDA tiers' tests on a machine without a GPU.
std::unique_ptr<Tier> MakeAddressKeepingHostTier(std::string name, uint64_t capacity);

// A RAM tier with a fixed capacity: an arena placed by a best-fit sub-allocator (256 B
// alignment), for machines without a GPU and for tests. A waited copy into it of 8 MiB or more
// uses up to `copy_threads` threads (one core copies at about half the memory bandwidth);
// background copies use one.
std::unique_ptr<Tier> MakeHostTier(std::string name, uint64_t capacity, int copy_threads = 1);

struct CudaTierOptions {
  int device = 0;
  uint64_t device_budget = 0;  // bytes of GPU memory the manager may back (its occupancy)
  // Address range for blocks below the mapping granularity (2 MiB): reserved up front, backed
  // granule by granule as blocks land in it (counted in the budget as backed). When it is full,
  // a small block gets a whole granule of its own. Default: 256 MiB of addresses.
  uint64_t small_arena = 256ull << 20;
  uint64_t pinned_capacity = 0;  // pinned host memory, allocated up front
  // Devices that may access the blocks too (peer access granted on every mapping, and again
  // after each Restore). Default: none.
  std::vector<int> peer_devices;
  // Ask for physical memory exportable as a POSIX file descriptor (cuMemExportToShareableHandle,
  // for CUDA IPC between processes). Each Restore backs a block with new memory: an importer
  // must import again after a move. Default: off.
  bool posix_fd_handles = false;
  // How a move waits for the work issued before Release (the release contract):
  //   false (default)  for every stream of the device (cudaDeviceSynchronize). This breaks a
  //                    CUDA graph capture running on another thread of the same device, in any
  //                    capture mode (measured: scripts/gpu-check's capture table); the move
  //                    then fails and the buffer stays.
  //   true             for the legacy default stream, and through it for every blocking stream
  //                    (an event recorded there and waited for): captures on other threads
  //                    survive, but work on non-blocking streams (cudaStreamNonBlocking,
  //                    per-thread default streams) must have finished before Release.
  bool capture_safe = false;
};

// The CUDA tiers, fastest first: GPU memory (a block of at least the mapping granularity, or a
// small one that got a granule of its own, keeps its device address across moves; blocks
// packed into the small-block range get a new one when they come back) and
// pinned host memory (one allocation up front, placed in exact sizes; nothing is pinned on the
// trim path). Copies run on the tiers' own non-blocking streams, one per direction and urgency,
// so a stall never queues behind a background copy; waits block (no spinning core). Every call
// selects the tier's device and restores the caller's; tier calls run in relaxed stream-capture
// mode, so a trim on one thread does not break a graph capture on another (a move that the
// driver refuses during a capture fails cleanly and the buffer stays where it was). Calling
// the manager from inside a capture on the same thread is not supported.
// Returns kUnavailable when built without CUDA, when no device or driver is usable, or when the
// driver is older than the toolkit the library was built with (the message names both
// versions); kFailedPrecondition when the device lacks virtual memory management;
// kInvalidArgument for bad options.
Result<std::vector<std::unique_ptr<Tier>>> MakeCudaTiers(const CudaTierOptions& options);

}  // namespace seedance::trim
