/* seedance/trim_c.h: the C API of seedance::trim, for C programs and other languages (ctypes,
 * cgo, Rust FFI). Same semantics as seedance/trim.h; see there for the policy.
 *
 * Every function returning int returns SD_TRIM_OK (0) or a negative SD_TRIM_E* code; then
 * sd_trim_last_error() says why. A manager is not thread-safe: one thread, or your own lock. */
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
  SD_TRIM_EINVAL = -1,     /* bad argument */
  SD_TRIM_ENOTFOUND = -2,  /* unknown buffer */
  SD_TRIM_ENOSPACE = -3,   /* no tier can hold it / the fast tier cannot make room */
  SD_TRIM_EBUSY = -4,      /* the buffer is acquired */
  SD_TRIM_EINTERNAL = -5
};

typedef struct {
  double occupancy_trigger;     /* 0.92 */
  int occupancy_samples;        /* 3 */
  double idle_share_trigger;    /* 0.35 */
  uint64_t idle_steps;          /* 50 */
  double fragmentation_trigger; /* 0.28 */
  uint64_t min_victim_bytes;    /* 16 MiB */
  double low_watermark;         /* 0.80 */
  int async_copies;             /* 0: moves started by sd_trim_step() copy in the background when 1 */
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
} sd_trim_stats;

/* The article's defaults. */
void sd_trim_policy_defaults(sd_trim_policy* policy);

/* A manager over two host (RAM) tiers of the given capacities; `policy` may be NULL
 * (defaults). NULL when the arenas cannot be mapped. */
sd_trim_manager* sd_trim_create_host(uint64_t fast_capacity, uint64_t slow_capacity,
                                     const sd_trim_policy* policy);
void sd_trim_destroy(sd_trim_manager* manager);

int sd_trim_register(sd_trim_manager* manager, uint64_t size, const char* name,
                     const char* group, sd_trim_buffer* id);
int sd_trim_unregister(sd_trim_manager* manager, sd_trim_buffer id);
/* *ptr is valid on the fast tier until sd_trim_release(). */
int sd_trim_acquire(sd_trim_manager* manager, sd_trim_buffer id, void** ptr);
/* For a caller that only reads the buffer until sd_trim_release(): its copy on the slow tier
 * stays valid, so moving it down again needs no copy. Never write through *ptr. */
int sd_trim_acquire_read(sd_trim_manager* manager, sd_trim_buffer id, const void** ptr);
int sd_trim_release(sd_trim_manager* manager, sd_trim_buffer id);
void sd_trim_step(sd_trim_manager* manager);
int sd_trim_prefetch(sd_trim_manager* manager, sd_trim_buffer id);
/* Trims now; returns how many buffers moved. */
size_t sd_trim_trim(sd_trim_manager* manager);
/* 0 = fast tier. */
int sd_trim_tier_of(sd_trim_manager* manager, sd_trim_buffer id, int* tier);
void sd_trim_get_stats(const sd_trim_manager* manager, sd_trim_stats* stats);
/* The reason for the last error on this manager ("" when none). */
const char* sd_trim_last_error(const sd_trim_manager* manager);

#ifdef __cplusplus
}
#endif

#endif /* SEEDANCE_TRIM_C_H_ */
