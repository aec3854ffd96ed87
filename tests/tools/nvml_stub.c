/* A stand-in for libnvidia-ml.so.1 in tests without a GPU: the functions the gpu source loads,
 * answering from a script named by $SEEDANCE_NVML_STUB (one directive a line, '#' comments):
 *
 *   init_error CODE                  nvmlInit_v2 fails with CODE (9: driver not loaded)
 *   count N                          N devices (at most 64)
 *   claim_count N                    nvmlDeviceGetCount says N (handles past `count` fail)
 *   name DEV TEXT...                 the device's name (default "Stub GPU DEV")
 *   uuid DEV TEXT                    its UUID (default GPU-00000000-stub-DEV)
 *   series DEV FIELD V1 V2 ...       what successive calls return, cycling; NS answers
 *                                    NOT_SUPPORTED, LOST GPU_IS_LOST. FIELD: mem_total
 *                                    mem_used mem_reserved util_gpu util_mem power_mw energy_mj
 *                                    temp sm_clock mem_clock pcie_tx_kb pcie_rx_kb gpm_sm_util
 *                                    gpm_sm_occ gpm_dram_bw gpm_pcie_tx gpm_pcie_rx
 *   gpm DEV 1                        the device offers GPM
 *   processes DEV N BYTES            N compute processes, pids 100000.., BYTES each
 *   process DEV PID BYTES            one more compute process (BYTES -1: not available)
 *   lost_after DEV N                 after N memory readings every call answers GPU_IS_LOST
 *   xid DEV CODE AT                  an Xid CODE event when memory has been read AT times
 *   hang DEV AT SECONDS              the AT-th memory reading blocks SECONDS (a wedged driver)
 *   memory_v2 CODE                   nvmlDeviceGetMemoryInfo_v2 answers CODE (25: an older driver)
 *
 * Memory fields not scripted: total 80 GiB, used 1 GiB, reserved 0. Fields with no series
 * answer NOT_SUPPORTED. nvmlDeviceGetMemoryInfo_v2 checks the version word as the driver does.
 * Single-threaded use (the source's sampler thread). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_DEV 64
#define MAX_SERIES 64
#define MAX_PROC 4096
#define NS_VALUE (-1.0)
#define LOST_VALUE (-2.0)

enum {
  F_MEM_TOTAL,
  F_MEM_USED,
  F_MEM_RESERVED,
  F_UTIL_GPU,
  F_UTIL_MEM,
  F_POWER,
  F_ENERGY,
  F_TEMP,
  F_SM_CLOCK,
  F_MEM_CLOCK,
  F_PCIE_TX,
  F_PCIE_RX,
  F_GPM_SM_UTIL,
  F_GPM_SM_OCC,
  F_GPM_DRAM,
  F_GPM_PCIE_TX,
  F_GPM_PCIE_RX,
  F_COUNT
};
static const char* kFieldNames[F_COUNT] = {
    "mem_total",   "mem_used",   "mem_reserved", "util_gpu",    "util_mem",   "power_mw",
    "energy_mj",   "temp",       "sm_clock",     "mem_clock",   "pcie_tx_kb", "pcie_rx_kb",
    "gpm_sm_util", "gpm_sm_occ", "gpm_dram_bw",  "gpm_pcie_tx", "gpm_pcie_rx"};

struct series {
  int n;
  int next;
  double v[MAX_SERIES];
};
struct proc {
  unsigned int pid;
  unsigned long long bytes;
};
struct device {
  char name[96];
  char uuid[96];
  struct series f[F_COUNT];
  int gpm;
  int nproc;
  struct proc procs[MAX_PROC];
  long lost_after; /* -1: never */
  long memory_reads;
  long xid_code, xid_at;
  long hang_at, hang_seconds;
  int xid_sent;
};
static struct device g_dev[MAX_DEV];
static int g_count = 1;
static unsigned int g_claimed = 0;
static int g_memory_v2_error = 0;
static int g_init_error = 0;

typedef struct {
  unsigned long long total, free, used;
} mem_v1;
typedef struct {
  unsigned int version;
  unsigned long long total, reserved, free, used;
} mem_v2;
typedef struct {
  unsigned int gpu, memory;
} util_t;
typedef struct {
  unsigned int pid;
  unsigned long long used;
  unsigned int gi, ci;
} proc_t;
typedef struct {
  unsigned int version, supported;
} gpm_support_t;
typedef struct {
  unsigned int id;
  int ret;
  double value;
  char *a, *b, *c;
} gpm_metric_t;
typedef struct {
  unsigned int version, num;
  void *s1, *s2;
  gpm_metric_t metrics[1];
} gpm_get_t;
typedef struct {
  void* device;
  unsigned long long type, data;
  unsigned int gi, ci;
} event_t;

/* Each nvmlInit_v2 reads the script afresh (tests load the library more than once). */
static void load_script(void) {
  memset(g_dev, 0, sizeof g_dev);
  g_count = 1;
  g_claimed = 0;
  g_memory_v2_error = 0;
  g_init_error = 0;
  for (int d = 0; d < MAX_DEV; ++d) {
    snprintf(g_dev[d].name, sizeof g_dev[d].name, "Stub GPU %d", d);
    snprintf(g_dev[d].uuid, sizeof g_dev[d].uuid, "GPU-00000000-stub-%d", d);
    g_dev[d].lost_after = -1;
    g_dev[d].xid_at = -1;
    g_dev[d].hang_at = -1;
  }
  const char* path = getenv("SEEDANCE_NVML_STUB");
  FILE* f = path ? fopen(path, "r") : NULL;
  if (f == NULL) return;
  char line[4096];
  while (fgets(line, sizeof line, f)) {
    char* save = NULL;
    char* word = strtok_r(line, " \t\r\n", &save);
    if (word == NULL || word[0] == '#') continue;
    if (strcmp(word, "init_error") == 0) {
      g_init_error = atoi(strtok_r(NULL, " \t\r\n", &save));
      continue;
    }
    if (strcmp(word, "memory_v2") == 0) {
      g_memory_v2_error = atoi(strtok_r(NULL, " \t\r\n", &save));
      continue;
    }
    if (strcmp(word, "claim_count") == 0) {
      g_claimed = (unsigned int)strtoul(strtok_r(NULL, " \t\r\n", &save), NULL, 10);
      continue;
    }
    if (strcmp(word, "count") == 0) {
      g_count = atoi(strtok_r(NULL, " \t\r\n", &save));
      if (g_count > MAX_DEV) g_count = MAX_DEV;
      continue;
    }
    char* dev_text = strtok_r(NULL, " \t\r\n", &save);
    if (dev_text == NULL) continue;
    int d = atoi(dev_text);
    if (d < 0 || d >= MAX_DEV) continue;
    struct device* dev = &g_dev[d];
    if (strcmp(word, "name") == 0 || strcmp(word, "uuid") == 0) {
      char* rest = strtok_r(NULL, "\r\n", &save);
      if (rest == NULL) continue;
      snprintf(word[0] == 'n' ? dev->name : dev->uuid, 96, "%s", rest);
    } else if (strcmp(word, "series") == 0) {
      char* field = strtok_r(NULL, " \t\r\n", &save);
      for (int i = 0; field && i < F_COUNT; ++i) {
        if (strcmp(field, kFieldNames[i]) != 0) continue;
        struct series* s = &dev->f[i];
        s->n = 0;
        char* v;
        while ((v = strtok_r(NULL, " \t\r\n", &save)) != NULL && s->n < MAX_SERIES) {
          s->v[s->n++] = strcmp(v, "NS") == 0     ? NS_VALUE
                         : strcmp(v, "LOST") == 0 ? LOST_VALUE
                                                  : atof(v);
        }
      }
    } else if (strcmp(word, "gpm") == 0) {
      dev->gpm = atoi(strtok_r(NULL, " \t\r\n", &save));
    } else if (strcmp(word, "processes") == 0) {
      int n = atoi(strtok_r(NULL, " \t\r\n", &save));
      unsigned long long bytes = strtoull(strtok_r(NULL, " \t\r\n", &save), NULL, 10);
      for (int i = 0; i < n && dev->nproc < MAX_PROC; ++i) {
        dev->procs[dev->nproc].pid = 100000 + i;
        dev->procs[dev->nproc++].bytes = bytes;
      }
    } else if (strcmp(word, "process") == 0) {
      unsigned int pid = (unsigned int)atoi(strtok_r(NULL, " \t\r\n", &save));
      long long bytes = atoll(strtok_r(NULL, " \t\r\n", &save));
      if (dev->nproc < MAX_PROC) {
        dev->procs[dev->nproc].pid = pid;
        dev->procs[dev->nproc++].bytes = bytes < 0 ? ~0ULL : (unsigned long long)bytes;
      }
    } else if (strcmp(word, "lost_after") == 0) {
      dev->lost_after = atol(strtok_r(NULL, " \t\r\n", &save));
    } else if (strcmp(word, "hang") == 0) {
      dev->hang_at = atol(strtok_r(NULL, " \t\r\n", &save));
      dev->hang_seconds = atol(strtok_r(NULL, " \t\r\n", &save));
    } else if (strcmp(word, "xid") == 0) {
      dev->xid_code = atol(strtok_r(NULL, " \t\r\n", &save));
      dev->xid_at = atol(strtok_r(NULL, " \t\r\n", &save));
    }
  }
  fclose(f);
}

static struct device* dev_of(void* handle) {
  struct device* d = (struct device*)handle;
  if (d < g_dev || d >= g_dev + g_count) return NULL;
  return d;
}
static int is_lost(struct device* d) {
  return d->lost_after >= 0 && d->memory_reads > d->lost_after;
}
/* 0 and *out set, or an NVML error. */
static int next_value(struct device* d, int field, double* out) {
  if (is_lost(d)) return 15;
  struct series* s = &d->f[field];
  if (s->n == 0) return 3;
  double v = s->v[s->next];
  s->next = (s->next + 1) % s->n;
  if (v == NS_VALUE) return 3;
  if (v == LOST_VALUE) return 15;
  *out = v;
  return 0;
}

int nvmlInit_v2(void) {
  load_script();
  return g_init_error;
}
int nvmlShutdown(void) { return 0; }
const char* nvmlErrorString(int r) {
  switch (r) {
    case 0:
      return "Success";
    case 3:
      return "Not Supported";
    case 7:
      return "Insufficient Size";
    case 9:
      return "Driver Not Loaded";
    case 10:
      return "Timeout";
    case 15:
      return "GPU is lost";
    case 25:
      return "Argument version mismatch";
    default:
      return "Unknown Error";
  }
}
int nvmlDeviceGetCount_v2(unsigned int* n) {
  *n = g_claimed ? g_claimed : (unsigned int)g_count;
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void** handle) {
  if (i >= (unsigned int)g_count) return 2;
  *handle = &g_dev[i];
  return 0;
}
int nvmlDeviceGetName(void* h, char* out, unsigned int len) {
  struct device* d = dev_of(h);
  if (!d) return 2;
  snprintf(out, len, "%s", d->name);
  return 0;
}
int nvmlDeviceGetUUID(void* h, char* out, unsigned int len) {
  struct device* d = dev_of(h);
  if (!d) return 2;
  snprintf(out, len, "%s", d->uuid);
  return 0;
}
static int memory(struct device* d, double* total, double* used, double* reserved) {
  d->memory_reads++;
  if (d->memory_reads == d->hang_at) sleep((unsigned int)d->hang_seconds);
  if (is_lost(d)) return 15;
  *total = 80.0 * 1024 * 1024 * 1024;
  *used = 1024.0 * 1024 * 1024;
  *reserved = 0;
  int r;
  if (d->f[F_MEM_TOTAL].n && (r = next_value(d, F_MEM_TOTAL, total)) != 0) return r;
  if (d->f[F_MEM_USED].n && (r = next_value(d, F_MEM_USED, used)) != 0) return r;
  if (d->f[F_MEM_RESERVED].n && (r = next_value(d, F_MEM_RESERVED, reserved)) != 0) return r;
  return 0;
}
int nvmlDeviceGetMemoryInfo(void* h, mem_v1* m) {
  struct device* d = dev_of(h);
  double total, used, reserved;
  if (!d) return 2;
  int r = memory(d, &total, &used, &reserved);
  if (r) return r;
  m->total = (unsigned long long)total;
  m->used = (unsigned long long)used;
  m->free = m->total - m->used;
  return 0;
}
int nvmlDeviceGetMemoryInfo_v2(void* h, mem_v2* m) {
  struct device* d = dev_of(h);
  double total, used, reserved;
  if (!d) return 2;
  if (m->version != (unsigned int)(sizeof(mem_v2) | (2u << 24))) return 25;
  if (g_memory_v2_error) return g_memory_v2_error;
  int r = memory(d, &total, &used, &reserved);
  if (r) return r;
  m->total = (unsigned long long)total;
  m->used = (unsigned long long)used;
  m->reserved = (unsigned long long)reserved;
  m->free = m->total - m->used;
  return 0;
}
int nvmlDeviceGetUtilizationRates(void* h, util_t* u) {
  struct device* d = dev_of(h);
  double g, m = 0;
  if (!d) return 2;
  int r = next_value(d, F_UTIL_GPU, &g);
  if (r) return r;
  if (d->f[F_UTIL_MEM].n && (r = next_value(d, F_UTIL_MEM, &m)) != 0) return r;
  u->gpu = (unsigned int)g;
  u->memory = (unsigned int)m;
  return 0;
}
#define UINT_GETTER(fn, field)          \
  int fn(void* h, unsigned int* out) {  \
    struct device* d = dev_of(h);       \
    double v;                           \
    if (!d) return 2;                   \
    int r = next_value(d, field, &v);   \
    if (r == 0) *out = (unsigned int)v; \
    return r;                           \
  }
UINT_GETTER(nvmlDeviceGetPowerUsage, F_POWER)
int nvmlDeviceGetTotalEnergyConsumption(void* h, unsigned long long* out) {
  struct device* d = dev_of(h);
  double v;
  if (!d) return 2;
  int r = next_value(d, F_ENERGY, &v);
  if (r == 0) *out = (unsigned long long)v;
  return r;
}
int nvmlDeviceGetTemperature(void* h, int sensor, unsigned int* out) {
  struct device* d = dev_of(h);
  double v;
  if (!d || sensor != 0) return 2;
  int r = next_value(d, F_TEMP, &v);
  if (r == 0) *out = (unsigned int)v;
  return r;
}
int nvmlDeviceGetClockInfo(void* h, int type, unsigned int* out) {
  struct device* d = dev_of(h);
  double v;
  if (!d || (type != 1 && type != 2)) return 2;
  int r = next_value(d, type == 1 ? F_SM_CLOCK : F_MEM_CLOCK, &v);
  if (r == 0) *out = (unsigned int)v;
  return r;
}
int nvmlDeviceGetPcieThroughput(void* h, int counter, unsigned int* out) {
  struct device* d = dev_of(h);
  double v;
  if (!d || (counter != 0 && counter != 1)) return 2;
  int r = next_value(d, counter == 0 ? F_PCIE_TX : F_PCIE_RX, &v);
  if (r == 0) *out = (unsigned int)v;
  return r;
}
int nvmlDeviceGetComputeRunningProcesses_v3(void* h, unsigned int* count, proc_t* out) {
  struct device* d = dev_of(h);
  if (!d) return 2;
  if (is_lost(d)) return 15;
  if (*count < (unsigned int)d->nproc) {
    *count = (unsigned int)d->nproc;
    return 7;
  }
  for (int i = 0; i < d->nproc; ++i) {
    out[i].pid = d->procs[i].pid;
    out[i].used = d->procs[i].bytes;
    out[i].gi = out[i].ci = 0xFFFFFFFFu;
  }
  *count = (unsigned int)d->nproc;
  return 0;
}
int nvmlDeviceGetGraphicsRunningProcesses_v3(void* h, unsigned int* count, proc_t* out) {
  (void)out;
  if (!dev_of(h)) return 2;
  *count = 0;
  return 0;
}
int nvmlGpmQueryDeviceSupport(void* h, gpm_support_t* s) {
  struct device* d = dev_of(h);
  if (!d || s->version != 1) return 2;
  s->supported = (unsigned int)d->gpm;
  return 0;
}
int nvmlGpmSampleAlloc(void** sample) {
  *sample = calloc(1, 64);
  return *sample ? 0 : 20;
}
int nvmlGpmSampleFree(void* sample) {
  free(sample);
  return 0;
}
int nvmlGpmSampleGet(void* h, void* sample) {
  struct device* d = dev_of(h);
  if (!d || !sample) return 2;
  if (is_lost(d)) return 15;
  *(struct device**)sample = d;
  return 0;
}
int nvmlGpmMetricsGet(gpm_get_t* get) {
  if (get->version != 1 || !get->s1 || !get->s2) return 2;
  struct device* d = *(struct device**)get->s2;
  if (!d || *(struct device**)get->s1 != d) return 2;
  for (unsigned int i = 0; i < get->num; ++i) {
    int field = -1;
    switch (get->metrics[i].id) {
      case 2:
        field = F_GPM_SM_UTIL;
        break;
      case 3:
        field = F_GPM_SM_OCC;
        break;
      case 10:
        field = F_GPM_DRAM;
        break;
      case 20:
        field = F_GPM_PCIE_TX;
        break;
      case 21:
        field = F_GPM_PCIE_RX;
        break;
    }
    get->metrics[i].ret = field < 0 ? 2 : next_value(d, field, &get->metrics[i].value);
  }
  return 0;
}
static int g_event_set;
int nvmlEventSetCreate(void** set) {
  *set = &g_event_set;
  return 0;
}
int nvmlEventSetFree(void* set) {
  (void)set;
  return 0;
}
int nvmlDeviceRegisterEvents(void* h, unsigned long long types, void* set) {
  (void)types;
  (void)set;
  return dev_of(h) ? 0 : 2;
}
int nvmlEventSetWait_v2(void* set, event_t* e, unsigned int timeout_ms) {
  (void)set;
  (void)timeout_ms;
  for (int i = 0; i < g_count; ++i) {
    struct device* d = &g_dev[i];
    if (d->xid_at >= 0 && !d->xid_sent && d->memory_reads >= d->xid_at) {
      d->xid_sent = 1;
      e->device = d;
      e->type = 0x8;
      e->data = (unsigned long long)d->xid_code;
      return 0;
    }
  }
  return 10;
}
