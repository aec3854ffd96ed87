/* Compiled as C (C11) and run by ctest: the C API is usable from C, and behaves. */
#include <stdio.h>
#include <string.h>

#include "seedance/trim_c.h"

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      return 1;                                                                \
    }                                                                          \
  } while (0)

int main(void) {
  sd_trim_policy policy;
  sd_trim_policy_defaults(&policy);
  CHECK(policy.occupancy_trigger == 0.92 && policy.idle_steps == 50 && policy.async_copies == 0);
  policy.min_victim_bytes = 0;
  sd_trim_manager* m = sd_trim_create_host(1 << 20, 8 << 20, &policy);
  CHECK(m != NULL);
  sd_trim_buffer ids[8];
  for (int i = 0; i < 8; ++i) {
    CHECK(sd_trim_register(m, 200 << 10, "w", "model", &ids[i]) == SD_TRIM_OK);
    void* p = NULL;
    CHECK(sd_trim_acquire(m, ids[i], &p) == SD_TRIM_OK);
    memset(p, 'a' + i, 200 << 10);
    CHECK(sd_trim_release(m, ids[i]) == SD_TRIM_OK);
    sd_trim_step(m);
  }
  /* 1.6 MiB registered on a 1 MiB fast tier: some buffers had to move down. */
  int moved = 0;
  for (int i = 0; i < 8; ++i) {
    int tier = -1;
    CHECK(sd_trim_tier_of(m, ids[i], &tier) == SD_TRIM_OK);
    moved += tier == 1;
  }
  CHECK(moved > 0);
  /* Acquiring a moved buffer brings it back with its content. */
  for (int i = 0; i < 8; ++i) {
    void* p = NULL;
    CHECK(sd_trim_acquire(m, ids[i], &p) == SD_TRIM_OK);
    CHECK(((const char*)p)[12345] == 'a' + i);
    CHECK(sd_trim_release(m, ids[i]) == SD_TRIM_OK);
  }
  sd_trim_stats stats;
  sd_trim_get_stats(m, &stats);
  CHECK(stats.buffers == 8 && stats.stalls > 0 && stats.bytes_moved_up > 0);
  /* A buffer only read since it came back moves down again to its kept copy, without a copy. */
  int k = -1;
  for (int i = 0; i < 8 && k < 0; ++i) {
    int tier = -1;
    CHECK(sd_trim_tier_of(m, ids[i], &tier) == SD_TRIM_OK);
    if (tier == 1) k = i;
  }
  CHECK(k >= 0);
  const void* r = NULL;
  CHECK(sd_trim_acquire_read(m, ids[k], &r) == SD_TRIM_OK);
  CHECK(((const char*)r)[777] == 'a' + k);
  CHECK(sd_trim_release(m, ids[k]) == SD_TRIM_OK);
  sd_trim_get_stats(m, &stats);
  CHECK(stats.retained_bytes >= (200 << 10) && stats.bytes_down_without_copy == 0);
  for (int i = 0; i < 60; ++i) sd_trim_step(m); /* everything idle for 50+ steps: trimmed */
  int tier = -1;
  CHECK(sd_trim_tier_of(m, ids[k], &tier) == SD_TRIM_OK && tier == 1);
  sd_trim_get_stats(m, &stats);
  CHECK(stats.bytes_down_without_copy >= (200 << 10));
  CHECK(sd_trim_acquire_read(m, ids[k], &r) == SD_TRIM_OK);
  CHECK(((const char*)r)[777] == 'a' + k);
  CHECK(sd_trim_release(m, ids[k]) == SD_TRIM_OK);
  /* Errors carry a code and a reason. */
  void* p = NULL;
  CHECK(sd_trim_acquire(m, 999, &p) == SD_TRIM_ENOTFOUND);
  CHECK(strstr(sd_trim_last_error(m), "unknown buffer") != NULL);
  CHECK(sd_trim_acquire(m, ids[0], &p) == SD_TRIM_OK);
  CHECK(sd_trim_unregister(m, ids[0]) == SD_TRIM_EBUSY);
  CHECK(sd_trim_release(m, ids[0]) == SD_TRIM_OK);
  CHECK(sd_trim_unregister(m, ids[0]) == SD_TRIM_OK);
  /* A pointer maps back to its buffer. */
  CHECK(sd_trim_acquire(m, ids[1], &p) == SD_TRIM_OK);
  sd_trim_buffer found = 0;
  CHECK(sd_trim_lookup(m, (const char*)p + 1000, &found) == SD_TRIM_OK && found == ids[1]);
  CHECK(sd_trim_release(m, ids[1]) == SD_TRIM_OK);
  sd_trim_destroy(m);

  /* SD_TRIM_ZERO_BLOCKS_ALWAYS: a buffer of zeros but one block takes that block's room on
   * the slow tier, and comes back whole. */
  m = sd_trim_create_host(1 << 20, 8 << 20, &policy);
  CHECK(m != NULL);
  sd_trim_buffer z;
  CHECK(sd_trim_register_ex(m, 900 << 10, "z", NULL,
                            SD_TRIM_ZERO_BLOCKS | SD_TRIM_ZERO_BLOCKS_ALWAYS,
                            &z) == SD_TRIM_EINVAL);
  CHECK(sd_trim_register_ex(m, 900 << 10, "z", NULL, 64, &z) == SD_TRIM_EINVAL);
  CHECK(sd_trim_register_ex(m, 900 << 10, "z", NULL, SD_TRIM_ZERO_BLOCKS_ALWAYS, &z) == SD_TRIM_OK);
  CHECK(sd_trim_acquire(m, z, &p) == SD_TRIM_OK);
  memset(p, 0, 900 << 10);
  memset((char*)p + 4096, 'z', 256);
  CHECK(sd_trim_release(m, z) == SD_TRIM_OK);
  sd_trim_step(m);
  CHECK(sd_trim_trim(m) == 1);
  sd_trim_get_stats(m, &stats);
  CHECK(stats.bytes_moved_encoded == (900 << 10) && stats.bytes_codec_saved > (890 << 10));
  CHECK(sd_trim_acquire(m, z, &p) == SD_TRIM_OK);
  CHECK(((const char*)p)[4096 + 255] == 'z' && ((const char*)p)[4096 + 256] == 0);
  CHECK(sd_trim_release(m, z) == SD_TRIM_OK);
  sd_trim_destroy(m);

  /* A unit's buffers acquired and released in one call each; a failing batch holds nothing. */
  {
    m = sd_trim_create_host(1 << 20, 8 << 20, &policy);
    CHECK(m != NULL);
    sd_trim_buffer b[3];
    for (int i = 0; i < 3; ++i) CHECK(sd_trim_register(m, 4096, "b", "unit", &b[i]) == SD_TRIM_OK);
    const void* ptrs[3] = {NULL, NULL, NULL};
    CHECK(sd_trim_acquire_many(m, b, 3, 1, ptrs) == SD_TRIM_OK);
    CHECK(ptrs[0] != NULL && ptrs[1] != NULL && ptrs[2] != NULL && ptrs[0] != ptrs[1]);
    CHECK(sd_trim_unregister(m, b[1]) == SD_TRIM_EBUSY);
    CHECK(sd_trim_release_many(m, b, 3) == SD_TRIM_OK);
    sd_trim_buffer with_unknown[3] = {b[0], b[1], 999};
    CHECK(sd_trim_acquire_many(m, with_unknown, 3, 0, ptrs) == SD_TRIM_ENOTFOUND);
    /* Prefetch hints for a unit: on the fast tier already, nothing to do; every id is tried,
     * the first error returned. */
    CHECK(sd_trim_prefetch_many(m, b, 3) == SD_TRIM_OK);
    CHECK(sd_trim_prefetch_many(m, with_unknown, 3) == SD_TRIM_ENOTFOUND);
    CHECK(sd_trim_prefetch_many(NULL, b, 3) == SD_TRIM_EINVAL);
    CHECK(sd_trim_unregister(m, b[0]) == SD_TRIM_OK); /* released again: not busy */
    sd_trim_destroy(m);
  }

  /* Weight streaming on the host: 6 units of 64 KiB under a budget of 3: some stay, the rest
   * stream through the ring, and every unit reads its own bytes, iteration after iteration. */
  {
    static unsigned char units[6][64 << 10];
    uint64_t sizes[6];
    double seconds[6];
    const void* hosts[6];
    for (int i = 0; i < 6; ++i) {
      memset(units[i], 'A' + i, sizeof units[i]);
      sizes[i] = sizeof units[i];
      seconds[i] = 1e-4;
      hosts[i] = units[i];
    }
    unsigned char resident[6];
    sd_trim_stream_plan_info info;
    CHECK(sd_trim_stream_plan(6, sizes, seconds, 3 * (64 << 10), 1e9, resident, &info) ==
          SD_TRIM_OK);
    CHECK(info.streamed_bytes > 0 && info.resident_bytes + info.ring_bytes <= 3 * (64 << 10));
    CHECK(sd_trim_stream_plan(6, sizes, seconds, 1000, 1e9, NULL, NULL) == SD_TRIM_ENOSPACE);
    sd_trim_stream* st = NULL;
    CHECK(sd_trim_stream_create_host(6, sizes, seconds, hosts, 3 * (64 << 10), 1e9, &st) ==
          SD_TRIM_OK);
    for (int it = 0; it < 3; ++it) {
      for (int i = 0; i < 6; ++i) {
        const void* u = NULL;
        CHECK(sd_trim_stream_begin(st, (size_t)i, &u) == SD_TRIM_OK);
        CHECK(((const unsigned char*)u)[0] == 'A' + i &&
              ((const unsigned char*)u)[65535] == 'A' + i);
        CHECK(sd_trim_stream_end(st, (size_t)i) == SD_TRIM_OK);
      }
    }
    const void* u = NULL;
    CHECK(sd_trim_stream_begin(st, 3, &u) == SD_TRIM_EBUSY);
    CHECK(strstr(sd_trim_last_error(NULL), "order changed") != NULL);
    sd_trim_stream_stats ss;
    sd_trim_stream_get_stats(st, &ss);
    CHECK(ss.bytes_copied >= 3 * info.streamed_bytes && ss.order_misses == 1);
    sd_trim_stream_destroy(st);

    /* The CUDA streamer: memory of the wrong kind is refused, saying which (here the ring is
     * host memory); without a usable CUDA (no driver, a build without nvcc) it says why. */
    void* on_device[6];
    for (int i = 0; i < 6; ++i) on_device[i] = resident[i] ? units[i] : NULL;
    static unsigned char ring[3 << 16];
    st = NULL;
    int crc = sd_trim_stream_create_cuda(6, sizes, seconds, hosts, on_device, ring, sizeof ring,
                                         3 * (64 << 10), 1e9, 0, NULL, &st);
    CHECK(st == NULL);
    CHECK(crc == SD_TRIM_EINVAL || crc == SD_TRIM_EUNAVAILABLE);
    if (crc == SD_TRIM_EINVAL) {
      CHECK(strstr(sd_trim_last_error(NULL), "the ring is not device memory") != NULL);
    } else {
      const char* why = sd_trim_last_error(NULL); /* no driver, or a build without CUDA */
      CHECK(strstr(why, "driver") != NULL || strstr(why, "without CUDA") != NULL);
    }
    CHECK(sd_trim_stream_create_cuda(6, sizes, seconds, hosts, on_device, ring, 1000,
                                     3 * (64 << 10), 1e9, 0, NULL, &st) == SD_TRIM_EINVAL);
    CHECK(strstr(sd_trim_last_error(NULL), "less than the plan's") != NULL);
    CHECK(sd_trim_stream_create_cuda(6, sizes, seconds, hosts, NULL, ring, sizeof ring,
                                     3 * (64 << 10), 1e9, 0, NULL, &st) == SD_TRIM_EINVAL);
  }

  /* The CUDA tiers: a round trip where a device is usable; the reason where not. */
  sd_trim_cuda_options cuda;
  memset(&cuda, 0, sizeof cuda);
  cuda.device_budget = 64 << 20;
  cuda.pinned_capacity = 64 << 20;
  policy.low_watermark = 0.1;
  sd_trim_manager* g = NULL;
  int rc = sd_trim_create_cuda(&cuda, &policy, &g);
  if (rc == SD_TRIM_OK) {
    sd_trim_buffer b;
    void* d = NULL;
    CHECK(sd_trim_register(g, 8 << 20, "w", NULL, &b) == SD_TRIM_OK);
    CHECK(sd_trim_acquire(g, b, &d) == SD_TRIM_OK);
    CHECK(sd_trim_release(g, b) == SD_TRIM_OK);
    sd_trim_step(g);
    CHECK(sd_trim_trim(g) == 1);
    CHECK(sd_trim_tier_of(g, b, &tier) == SD_TRIM_OK && tier == 1);
    void* back = NULL;
    CHECK(sd_trim_acquire(g, b, &back) == SD_TRIM_OK && back == d);
    CHECK(sd_trim_lookup(g, (const char*)back + 4096, &found) == SD_TRIM_OK && found == b);
    CHECK(sd_trim_release(g, b) == SD_TRIM_OK);
    sd_trim_destroy(g);
    printf("trim C API: CUDA tiers ok\n");
  } else {
    CHECK(rc == SD_TRIM_EUNAVAILABLE && sd_trim_last_error(NULL)[0] != 0);
    printf("trim C API: CUDA tiers not checked: %s\n", sd_trim_last_error(NULL));
  }
  printf("trim C API: ok\n");
  return 0;
}
