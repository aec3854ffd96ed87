/* seedance/trim_c.h: the C API of seedance::trim, for C programs and other languages (ctypes,
 * cgo, Rust FFI). Same semantics as seedance/trim.h; see there for the policy.
 *
 * Every function returning int returns SD_TRIM_OK (0) or a negative SD_TRIM_E* code; then
 * sd_trim_last_error() says why (per thread).
 *
 * Thread-safe: every call on a manager takes the manager's lock, so threads may share one
 * (each call waits for the one in progress; a stall copies while holding it). Pointers from
 * sd_trim_acquire() stay valid until the matching sd_trim_release(), whichever thread calls.
 * The release contract of seedance/trim.h applies: release a buffer once the work that uses it
 * has been issued; the CUDA tiers wait for the device before moving it.
 *
 * Shipped as libseedance_trim.so (symbols versioned SEEDANCE_TRIM_1) and in the static
 * library seedance_trim. */
#ifndef SEEDANCE_TRIM_C_H_
#define SEEDANCE_TRIM_C_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sd_trim_manager sd_trim_manager;
typedef uint64_t sd_trim_buffer;

enum {
  SD_TRIM_OK = 0,
  SD_TRIM_EINVAL = -1,    /* bad argument */
  SD_TRIM_ENOTFOUND = -2, /* unknown buffer */
  SD_TRIM_ENOSPACE = -3,  /* no tier can hold it / the fast tier cannot make room */
  SD_TRIM_EBUSY = -4,     /* the buffer is acquired */
  SD_TRIM_EINTERNAL = -5,
  SD_TRIM_EUNAVAILABLE = -6 /* no usable device or driver, or built without CUDA */
};

typedef struct {
  double occupancy_trigger;     /* 0.92 */
  int occupancy_samples;        /* 3 */
  double idle_share_trigger;    /* 0.35 */
  uint64_t idle_steps;          /* 50 */
  double fragmentation_trigger; /* 0.28 */
  uint64_t min_victim_bytes;    /* 16 MiB */
  double low_watermark;         /* 0.80 */
  int async_copies; /* 0: moves started by sd_trim_step() copy in the background when 1 */
} sd_trim_policy;

typedef struct {
  uint64_t step;
  uint64_t buffers;
  uint64_t registered_bytes;
  uint64_t fast_used;
  uint64_t fast_capacity;
  double fast_fragmentation;
  double idle_share;
  uint64_t trims;
  uint64_t bytes_moved_down;
  uint64_t bytes_moved_up;
  uint64_t stalls;
  double trim_latency_p50_us;
  double trim_latency_p99_us;
  uint64_t bytes_down_without_copy; /* of bytes_moved_down: to a kept copy (acquire_read) */
  uint64_t retained_bytes;          /* copies kept on the slow tier now */
  uint64_t fast_peak_used;          /* the most fast_used seen after a placement */
  uint64_t prefetches;              /* buffers brought back ahead of a learned periodic use */
  double copy_seconds;              /* time spent copying between tiers */
  /* The zero-block codec (SD_TRIM_ZERO_BLOCKS; TrimStats in seedance/trim.h). */
  uint64_t bytes_moved_encoded; /* of the bytes moved (down and up): those that crossed encoded */
  uint64_t bytes_codec_saved;   /* zero blocks the codec left out of them */
  double codec_seconds;         /* time in codec passes (not in copy_seconds) */
  uint64_t codec_declined;      /* codec buffers moved as they are: it would not have paid */
} sd_trim_stats;

/* The CUDA tiers (seedance/trim.h, CudaTierOptions): GPU memory under `device_budget`, then
 * `pinned_capacity` bytes of pinned host memory. */
typedef struct {
  int device;
  uint64_t device_budget;
  uint64_t pinned_capacity;
  uint64_t small_arena;    /* 0: the default (256 MiB of addresses) */
  const int* peer_devices; /* devices granted access too; may be NULL */
  int peer_device_count;
  int posix_fd_handles; /* 1: exportable memory (CUDA IPC) */
  int capture_safe;     /* 1: moves wait for the legacy stream only (CudaTierOptions) */
} sd_trim_cuda_options;

/* sd_trim_register_ex flags. */
enum {
  SD_TRIM_STABLE_ADDRESS = 1, /* the pointer never changes (TierManager::Register) */
  /* Cross to the slower tier through the zero-block codec (BufferCodec in seedance/trim.h):
   * when it pays, from the measured link and codec rates, or always (for room on the slower
   * tier). Host tiers run the CPU codec, the CUDA device tier the device codec. */
  SD_TRIM_ZERO_BLOCKS = 2,
  SD_TRIM_ZERO_BLOCKS_ALWAYS = 4
};

/* The article's defaults. */
void sd_trim_policy_defaults(sd_trim_policy* policy);

/* A manager over two host (RAM) tiers of the given capacities; `policy` may be NULL
 * (defaults). NULL when the arenas cannot be mapped. */
sd_trim_manager* sd_trim_create_host(uint64_t fast_capacity, uint64_t slow_capacity,
                                     const sd_trim_policy* policy);
/* A manager over a host fast tier whose blocks keep their address across moves (evicted pages
 * are given back and made inaccessible), then a plain host tier: for memory wrapped by objects
 * that hold its address (tensors). SD_TRIM_OK and *out set, or an error. */
int sd_trim_create_host_keeping(uint64_t fast_capacity, uint64_t slow_capacity,
                                const sd_trim_policy* policy, sd_trim_manager** out);
/* A manager over the CUDA tiers. SD_TRIM_EUNAVAILABLE without a usable device, driver or CUDA
 * build (sd_trim_last_error(NULL) says which); SD_TRIM_EINVAL for bad options. */
int sd_trim_create_cuda(const sd_trim_cuda_options* options, const sd_trim_policy* policy,
                        sd_trim_manager** out);
void sd_trim_destroy(sd_trim_manager* manager);

int sd_trim_register(sd_trim_manager* manager, uint64_t size, const char* name, const char* group,
                     sd_trim_buffer* id);
/* sd_trim_register with SD_TRIM_* flags. */
int sd_trim_register_ex(sd_trim_manager* manager, uint64_t size, const char* name,
                        const char* group, unsigned flags, sd_trim_buffer* id);
int sd_trim_unregister(sd_trim_manager* manager, sd_trim_buffer id);
/* *ptr is valid on the fast tier until sd_trim_release(). */
int sd_trim_acquire(sd_trim_manager* manager, sd_trim_buffer id, void** ptr);
/* For a caller that only reads the buffer until sd_trim_release(): its copy on the slow tier
 * stays valid, so moving it down again needs no copy. Never write through *ptr. */
int sd_trim_acquire_read(sd_trim_manager* manager, sd_trim_buffer id, const void** ptr);
int sd_trim_release(sd_trim_manager* manager, sd_trim_buffer id);
/* A unit's buffers in one call (one lock, one crossing of the language boundary): ptrs[i] for
 * ids[i], by sd_trim_acquire_read (`read_only` 1) or sd_trim_acquire. On an error, the buffers
 * this call acquired are released again: nothing is held. */
int sd_trim_acquire_many(sd_trim_manager* manager, const sd_trim_buffer* ids, size_t n,
                         int read_only, const void** ptrs);
/* sd_trim_release for each of ids; every one is released, the first error is returned. */
int sd_trim_release_many(sd_trim_manager* manager, const sd_trim_buffer* ids, size_t n);
void sd_trim_step(sd_trim_manager* manager);
int sd_trim_prefetch(sd_trim_manager* manager, sd_trim_buffer id);
/* Starts bringing each of ids back ahead of its use: on the copy worker when the policy has
 * async_copies (returns at once; an acquire waits for a copy still running, and counts no
 * stall), else now. Every id is tried; the first error is returned. */
int sd_trim_prefetch_many(sd_trim_manager* manager, const sd_trim_buffer* ids, size_t n);
/* Trims now; returns how many buffers moved. */
size_t sd_trim_trim(sd_trim_manager* manager);
/* 0 = fast tier. */
int sd_trim_tier_of(sd_trim_manager* manager, sd_trim_buffer id, int* tier);
/* The buffer holding address `p` (its fast-tier or kept address, or its slow-tier block). */
int sd_trim_lookup(sd_trim_manager* manager, const void* p, sd_trim_buffer* id);
void sd_trim_get_stats(const sd_trim_manager* manager, sd_trim_stats* stats);
/* ---- Weight streaming (seedance::trim's StreamPlan and StreamExecutor; docs/trim.md) ----
 * A model that runs the same units in the same order every iteration keeps some units resident
 * and streams the rest through a ring, each copy issued ahead of its use. */
typedef struct sd_trim_stream sd_trim_stream;

typedef struct {
  uint64_t resident_bytes;
  uint64_t ring_bytes;
  uint64_t streamed_bytes; /* copied per iteration */
  double compute_seconds;
  double bound_seconds; /* max(compute, streamed / link): no plan does better */
  double simulated_step_seconds;
  int lookahead; /* streamed units copied ahead of the one computing, simulated */
} sd_trim_stream_plan_info;

typedef struct {
  uint64_t copies;
  uint64_t bytes_copied;
  uint64_t issued_at_begin; /* copies issued only when their unit began */
  uint64_t host_waits;      /* begins that waited for their copy (on a host, the compute waits) */
  uint64_t order_misses;
  int most_ahead; /* the most copies issued beyond the unit that began */
} sd_trim_stream_stats;

/* Plans streaming for `n` units recorded in the order they ran (`bytes`, compute `seconds`)
 * under `budget` bytes and a link of `link_bytes_per_second`. `resident` (n bytes, may be NULL)
 * gets 1 for the units that stay. SD_TRIM_ENOSPACE when no ring holds the largest streamed unit. */
int sd_trim_stream_plan(size_t n, const uint64_t* bytes, const double* seconds, uint64_t budget,
                        double link_bytes_per_second, uint8_t* resident,
                        sd_trim_stream_plan_info* info);
/* A streamer on the host (the CPU backend): plans as sd_trim_stream_plan, then a resident unit
 * is used where it is (`host[i]`, its bytes) and the others are copied by a thread into a ring
 * of the plan's ring_bytes ahead of their use. `host` must stay valid and unchanged while the
 * streamer lives. */
int sd_trim_stream_create_host(size_t n, const uint64_t* bytes, const double* seconds,
                               const void* const* host, uint64_t budget,
                               double link_bytes_per_second, sd_trim_stream** out);
/* A streamer on CUDA device `device`: plans as sd_trim_stream_plan (ask it first for the
 * resident units and the ring's size), then each streamed unit is copied from `host[i]` (pinned
 * host memory) on a copy stream of its own into `ring` (device memory of `ring_bytes`, at least
 * the plan's ring_bytes) ahead of its use, and `compute_stream` (a cudaStream_t, NULL for the
 * legacy default stream: where the units' compute is issued) waits for that copy on the device.
 * A resident unit is used at `resident[i]`, device memory the caller has filled with its bytes
 * (NULL for streamed units). sd_trim_stream_end records an event on `compute_stream` after the
 * unit's compute: its bytes in the ring are overwritten only once that event has passed, again
 * a wait on the device. Nothing waits on the host in steady state. The memory must stay valid
 * until sd_trim_stream_destroy, which waits for the copies it issued. SD_TRIM_EINVAL names
 * memory of the wrong kind; SD_TRIM_EUNAVAILABLE in builds without CUDA or without a driver. */
int sd_trim_stream_create_cuda(size_t n, const uint64_t* bytes, const double* seconds,
                               const void* const* host, void* const* resident, void* ring,
                               uint64_t ring_bytes, uint64_t budget, double link_bytes_per_second,
                               int device, void* compute_stream, sd_trim_stream** out);
/* Before unit `unit` computes: *ptr holds its bytes until sd_trim_stream_end (read only).
 * SD_TRIM_EBUSY when it is not the unit the plan expects next (the order changed: record the
 * units and create the streamer again). */
int sd_trim_stream_begin(sd_trim_stream* stream, size_t unit, const void** ptr);
int sd_trim_stream_end(sd_trim_stream* stream, size_t unit);
void sd_trim_stream_get_info(const sd_trim_stream* stream, sd_trim_stream_plan_info* info);
void sd_trim_stream_get_stats(const sd_trim_stream* stream, sd_trim_stream_stats* stats);
void sd_trim_stream_destroy(sd_trim_stream* stream);

/* The reason for the calling thread's last error ("" when none); valid until that thread's
 * next call. `manager` is not needed (may be NULL: errors of the create functions). */
const char* sd_trim_last_error(const sd_trim_manager* manager);

#ifdef __cplusplus
}
#endif

#endif /* SEEDANCE_TRIM_C_H_ */
