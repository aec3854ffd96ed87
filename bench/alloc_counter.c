/* alloc_counter.so: counts heap allocations of the process it is preloaded into
 * (LD_PRELOAD), for bench/run alloc. malloc, calloc, realloc, aligned allocations; every
 * thread. The count is written to $ALLOC_COUNTER_FILE every 50 ms by a thread of its own.
 * Bench only: never linked into seedance. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

extern void* __libc_malloc(size_t);
extern void* __libc_calloc(size_t, size_t);
extern void* __libc_realloc(void*, size_t);
extern void* __libc_memalign(size_t, size_t);

static atomic_ullong g_allocs;

void* malloc(size_t n) {
  atomic_fetch_add_explicit(&g_allocs, 1, memory_order_relaxed);
  return __libc_malloc(n);
}
void* calloc(size_t a, size_t b) {
  atomic_fetch_add_explicit(&g_allocs, 1, memory_order_relaxed);
  return __libc_calloc(a, b);
}
void* realloc(void* p, size_t n) {
  atomic_fetch_add_explicit(&g_allocs, 1, memory_order_relaxed);
  return __libc_realloc(p, n);
}
void* memalign(size_t a, size_t n) {
  atomic_fetch_add_explicit(&g_allocs, 1, memory_order_relaxed);
  return __libc_memalign(a, n);
}
int posix_memalign(void** out, size_t a, size_t n) {
  atomic_fetch_add_explicit(&g_allocs, 1, memory_order_relaxed);
  *out = __libc_memalign(a, n);
  return *out ? 0 : 12; /* ENOMEM */
}
void* aligned_alloc(size_t a, size_t n) {
  atomic_fetch_add_explicit(&g_allocs, 1, memory_order_relaxed);
  return __libc_memalign(a, n);
}

static void* writer(void* arg) {
  const char* path = (const char*)arg;
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  for (;;) {
    /* open/write, not fopen/fprintf: the counter itself must not allocate. */
    char line[32];
    int len = snprintf(line, sizeof line, "%llu\n", (unsigned long long)atomic_load(&g_allocs));
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ssize_t w = write(fd, line, (size_t)len);
      close(fd);
      if (w == len) rename(tmp, path);
    }
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  return NULL;
}

__attribute__((constructor)) static void start(void) {
  const char* path = getenv("ALLOC_COUNTER_FILE");
  if (path == NULL) return;
  static char copy[4096];
  strncpy(copy, path, sizeof copy - 1);
  pthread_t t;
  pthread_create(&t, NULL, writer, copy);
  pthread_detach(t);
}
