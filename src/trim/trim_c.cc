// The C API (seedance/trim_c.h) over seedance::trim::TierManager: one lock per manager, the
// last error per thread, no C++ exception past the boundary.
#include "seedance/trim_c.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "seedance/trim.h"
#include "trim/cuda_stream_device.h"
#include "trim/host_stream_device.h"
#include "trim/stream_executor.h"
#include "trim/stream_plan.h"

struct sd_trim_manager {
  std::unique_ptr<seedance::trim::TierManager> manager;
  mutable std::mutex mu;
};

struct sd_trim_stream {
  seedance::trim::StreamPlan plan;
  std::vector<char> host_ring;  // the host backend's ring: the plan's ring_bytes
  std::unique_ptr<seedance::trim::StreamDevice> device;
  std::unique_ptr<seedance::trim::StreamExecutor> executor;  // destroyed before the device
  mutable std::mutex mu;
};

namespace {

using seedance::Status;
using seedance::StatusCode;
namespace trim = seedance::trim;

thread_local std::string t_last_error;

int Code(const Status& s) {
  if (s.ok()) return SD_TRIM_OK;
  t_last_error = s.message();
  switch (s.code()) {
    case StatusCode::kInvalidArgument:
      return SD_TRIM_EINVAL;
    case StatusCode::kNotFound:
      return SD_TRIM_ENOTFOUND;
    case StatusCode::kResourceExhausted:
      return SD_TRIM_ENOSPACE;
    case StatusCode::kFailedPrecondition:
      return SD_TRIM_EBUSY;
    case StatusCode::kUnavailable:
      return SD_TRIM_EUNAVAILABLE;
    default:
      return SD_TRIM_EINTERNAL;
  }
}

int Invalid(const char* why) {
  t_last_error = why;
  return SD_TRIM_EINVAL;
}

trim::PolicyOptions ToOptions(const sd_trim_policy* p) {
  trim::PolicyOptions o;
  if (p == nullptr) return o;
  o.occupancy_trigger = p->occupancy_trigger;
  o.occupancy_samples = p->occupancy_samples;
  o.idle_share_trigger = p->idle_share_trigger;
  o.idle_steps = p->idle_steps;
  o.fragmentation_trigger = p->fragmentation_trigger;
  o.min_victim_bytes = p->min_victim_bytes;
  o.low_watermark = p->low_watermark;
  o.async_copies = p->async_copies != 0;
  return o;
}

// Wraps the tiers in a manager; every create function ends here.
int Create(seedance::Result<std::vector<std::unique_ptr<trim::Tier>>> tiers,
           const sd_trim_policy* policy, sd_trim_manager** out) {
  if (!tiers) return Code(tiers.error());
  auto manager = trim::TierManager::Create(std::move(tiers).value(), ToOptions(policy));
  if (!manager) return Code(manager.error());
  *out = new sd_trim_manager{std::move(manager).value(), {}};
  return SD_TRIM_OK;
}

// Runs `call` under the manager's lock, turning an allocation failure into an error code.
template <typename Call>
int Locked(const sd_trim_manager* m, const Call& call) {
  try {
    std::lock_guard<std::mutex> lock(m->mu);
    return call();
  } catch (const std::bad_alloc&) {
    t_last_error = "out of memory";
    return SD_TRIM_ENOSPACE;
  }
}

}  // namespace

extern "C" {

void sd_trim_policy_defaults(sd_trim_policy* policy) {
  if (policy == nullptr) return;
  const trim::PolicyOptions o;
  *policy = sd_trim_policy{o.occupancy_trigger, o.occupancy_samples,     o.idle_share_trigger,
                           o.idle_steps,        o.fragmentation_trigger, o.min_victim_bytes,
                           o.low_watermark,     o.async_copies ? 1 : 0};
}

sd_trim_manager* sd_trim_create_host(uint64_t fast_capacity, uint64_t slow_capacity,
                                     const sd_trim_policy* policy) {
  try {
    std::vector<std::unique_ptr<trim::Tier>> tiers;
    tiers.push_back(trim::MakeHostTier("fast", fast_capacity));
    tiers.push_back(trim::MakeHostTier("slow", slow_capacity));
    sd_trim_manager* m = nullptr;
    return Create(std::move(tiers), policy, &m) == SD_TRIM_OK ? m : nullptr;
  } catch (const std::bad_alloc&) {
    t_last_error = "cannot map the host arenas";
    return nullptr;
  }
}

int sd_trim_create_host_keeping(uint64_t fast_capacity, uint64_t slow_capacity,
                                const sd_trim_policy* policy, sd_trim_manager** out) {
  if (out == nullptr) return Invalid("out is NULL");
  try {
    std::vector<std::unique_ptr<trim::Tier>> tiers;
    tiers.push_back(trim::MakeAddressKeepingHostTier("fast", fast_capacity));
    tiers.push_back(trim::MakeHostTier("slow", slow_capacity));
    return Create(std::move(tiers), policy, out);
  } catch (const std::bad_alloc&) {
    t_last_error = "cannot map the host arena";
    return SD_TRIM_ENOSPACE;
  }
}

int sd_trim_create_cuda(const sd_trim_cuda_options* options, const sd_trim_policy* policy,
                        sd_trim_manager** out) {
  if (options == nullptr || out == nullptr) return Invalid("options or out is NULL");
  if (options->peer_device_count < 0 ||
      (options->peer_device_count > 0 && options->peer_devices == nullptr)) {
    return Invalid("peer_devices does not match peer_device_count");
  }
  try {
    trim::CudaTierOptions o;
    o.device = options->device;
    o.device_budget = options->device_budget;
    o.pinned_capacity = options->pinned_capacity;
    if (options->small_arena != 0) o.small_arena = options->small_arena;
    o.peer_devices.assign(options->peer_devices,
                          options->peer_devices + options->peer_device_count);
    o.posix_fd_handles = options->posix_fd_handles != 0;
    o.capture_safe = options->capture_safe != 0;
    return Create(trim::MakeCudaTiers(o), policy, out);
  } catch (const std::bad_alloc&) {
    t_last_error = "out of memory";
    return SD_TRIM_ENOSPACE;
  }
}

void sd_trim_destroy(sd_trim_manager* manager) { delete manager; }

int sd_trim_register(sd_trim_manager* m, uint64_t size, const char* name, const char* group,
                     sd_trim_buffer* id) {
  return sd_trim_register_ex(m, size, name, group, 0, id);
}

int sd_trim_register_ex(sd_trim_manager* m, uint64_t size, const char* name, const char* group,
                        unsigned flags, sd_trim_buffer* id) {
  if (m == nullptr || id == nullptr) return Invalid("manager or id is NULL");
  constexpr unsigned kKnown =
      SD_TRIM_STABLE_ADDRESS | SD_TRIM_ZERO_BLOCKS | SD_TRIM_ZERO_BLOCKS_ALWAYS;
  if ((flags & ~kKnown) != 0) return Invalid("unknown flags");
  if ((flags & SD_TRIM_ZERO_BLOCKS) != 0 && (flags & SD_TRIM_ZERO_BLOCKS_ALWAYS) != 0) {
    return Invalid("SD_TRIM_ZERO_BLOCKS and SD_TRIM_ZERO_BLOCKS_ALWAYS: choose one");
  }
  const trim::BufferCodec codec =
      (flags & SD_TRIM_ZERO_BLOCKS_ALWAYS) != 0 ? trim::BufferCodec::kZeroBlocksAlways
      : (flags & SD_TRIM_ZERO_BLOCKS) != 0      ? trim::BufferCodec::kZeroBlocks
                                                : trim::BufferCodec::kNone;
  return Locked(m, [&]() -> int {
    auto r = m->manager->Register(size, name ? name : "", group ? group : "",
                                  (flags & SD_TRIM_STABLE_ADDRESS) != 0);
    if (!r) return Code(r.error());
    if (Status s = m->manager->SetCodec(*r, codec); !s.ok()) return Code(s);
    *id = *r;
    return SD_TRIM_OK;
  });
}

int sd_trim_unregister(sd_trim_manager* m, sd_trim_buffer id) {
  if (m == nullptr) return Invalid("manager is NULL");
  return Locked(m, [&]() -> int { return Code(m->manager->Unregister(id)); });
}

int sd_trim_acquire(sd_trim_manager* m, sd_trim_buffer id, void** ptr) {
  if (m == nullptr || ptr == nullptr) return Invalid("manager or ptr is NULL");
  return Locked(m, [&]() -> int {
    auto r = m->manager->Acquire(id);
    if (!r) return Code(r.error());
    *ptr = *r;
    return SD_TRIM_OK;
  });
}

int sd_trim_acquire_many(sd_trim_manager* m, const sd_trim_buffer* ids, size_t n, int read_only,
                         const void** ptrs) {
  if (m == nullptr || (n > 0 && (ids == nullptr || ptrs == nullptr))) {
    return Invalid("manager, ids or ptrs is NULL");
  }
  return Locked(m, [&]() -> int {
    for (size_t i = 0; i < n; ++i) {
      Status failed;
      if (read_only != 0) {
        auto r = m->manager->AcquireRead(ids[i]);
        if (r)
          ptrs[i] = *r;
        else
          failed = r.error();
      } else {
        auto r = m->manager->Acquire(ids[i]);
        if (r)
          ptrs[i] = *r;
        else
          failed = r.error();
      }
      if (!failed.ok()) {
        const int rc = Code(failed);
        for (size_t j = 0; j < i; ++j) (void)m->manager->Release(ids[j]);  // nothing held
        return rc;
      }
    }
    return SD_TRIM_OK;
  });
}

int sd_trim_release_many(sd_trim_manager* m, const sd_trim_buffer* ids, size_t n) {
  if (m == nullptr || (n > 0 && ids == nullptr)) return Invalid("manager or ids is NULL");
  return Locked(m, [&]() -> int {
    int rc = SD_TRIM_OK;
    for (size_t i = 0; i < n; ++i) {
      const int r = Code(m->manager->Release(ids[i]));
      if (rc == SD_TRIM_OK) rc = r;  // the first error; the rest are still released
    }
    return rc;
  });
}

int sd_trim_acquire_read(sd_trim_manager* m, sd_trim_buffer id, const void** ptr) {
  if (m == nullptr || ptr == nullptr) return Invalid("manager or ptr is NULL");
  return Locked(m, [&]() -> int {
    auto r = m->manager->AcquireRead(id);
    if (!r) return Code(r.error());
    *ptr = *r;
    return SD_TRIM_OK;
  });
}

int sd_trim_release(sd_trim_manager* m, sd_trim_buffer id) {
  if (m == nullptr) return Invalid("manager is NULL");
  return Locked(m, [&]() -> int { return Code(m->manager->Release(id)); });
}

void sd_trim_step(sd_trim_manager* m) {
  if (m == nullptr) return;
  (void)Locked(m, [&]() -> int {
    m->manager->Step();
    return SD_TRIM_OK;
  });
}

int sd_trim_prefetch(sd_trim_manager* m, sd_trim_buffer id) {
  if (m == nullptr) return Invalid("manager is NULL");
  return Locked(m, [&]() -> int { return Code(m->manager->Prefetch(id)); });
}

int sd_trim_prefetch_many(sd_trim_manager* m, const sd_trim_buffer* ids, size_t n) {
  if (m == nullptr || (ids == nullptr && n > 0)) return Invalid("manager or ids is NULL");
  return Locked(m, [&]() -> int {
    Status first = Status::Ok();
    for (size_t i = 0; i < n; ++i) {
      Status s = m->manager->StartPrefetch(ids[i]);
      if (first.ok() && !s.ok()) first = std::move(s);
    }
    return Code(first);
  });
}

size_t sd_trim_trim(sd_trim_manager* m) {
  if (m == nullptr) return 0;
  size_t moved = 0;
  (void)Locked(m, [&]() -> int {
    moved = m->manager->Trim();
    return SD_TRIM_OK;
  });
  return moved;
}

int sd_trim_tier_of(sd_trim_manager* m, sd_trim_buffer id, int* tier) {
  if (m == nullptr || tier == nullptr) return Invalid("manager or tier is NULL");
  return Locked(m, [&]() -> int {
    auto r = m->manager->TierOf(id);
    if (!r) return Code(r.error());
    *tier = *r;
    return SD_TRIM_OK;
  });
}

int sd_trim_lookup(sd_trim_manager* m, const void* p, sd_trim_buffer* id) {
  if (m == nullptr || id == nullptr) return Invalid("manager or id is NULL");
  return Locked(m, [&]() -> int {
    auto r = m->manager->Lookup(p);
    if (!r) return Code(r.error());
    *id = *r;
    return SD_TRIM_OK;
  });
}

void sd_trim_get_stats(const sd_trim_manager* m, sd_trim_stats* out) {
  if (m == nullptr || out == nullptr) return;
  *out = sd_trim_stats{};
  (void)Locked(m, [&]() -> int {
    const trim::TrimStats s = m->manager->Stats();
    out->step = s.step;
    out->buffers = s.buffers;
    out->registered_bytes = s.registered_bytes;
    if (!s.tiers.empty()) {
      out->fast_used = s.tiers[0].used;
      out->fast_capacity = s.tiers[0].capacity;
      out->fast_fragmentation = s.tiers[0].fragmentation;
      out->fast_peak_used = s.tiers[0].peak_used;
    }
    out->idle_share = s.idle_share;
    out->trims = s.trims;
    out->bytes_moved_down = s.bytes_moved_down;
    out->bytes_moved_up = s.bytes_moved_up;
    out->stalls = s.stalls;
    out->bytes_down_without_copy = s.bytes_down_without_copy;
    out->retained_bytes = s.retained_bytes;
    out->trim_latency_p50_us = s.trim_latency_p50_us;
    out->trim_latency_p99_us = s.trim_latency_p99_us;
    out->prefetches = s.prefetches;
    out->copy_seconds = s.copy_seconds;
    out->bytes_moved_encoded = s.bytes_moved_encoded;
    out->bytes_codec_saved = s.bytes_codec_saved;
    out->codec_seconds = s.codec_seconds;
    out->codec_declined = s.codec_declined;
    return SD_TRIM_OK;
  });
}

const char* sd_trim_last_error(const sd_trim_manager*) { return t_last_error.c_str(); }

}  // extern "C"

namespace {

// The plan for the recorded units, checked.
int Plan(size_t n, const uint64_t* bytes, const double* seconds, uint64_t budget, double link,
         trim::StreamPlan* out) {
  if (n == 0 || bytes == nullptr || seconds == nullptr) return Invalid("no units recorded");
  std::vector<trim::UnitRecord> units;
  for (size_t i = 0; i < n; ++i) {
    if (!(seconds[i] >= 0)) return Invalid("a unit's compute seconds must be 0 or more");
    units.push_back({bytes[i], seconds[i]});
  }
  auto plan = trim::PlanStream(units, {.budget = budget, .link_bytes_per_second = link});
  if (!plan) return Code(plan.error());
  *out = std::move(plan).value();
  return SD_TRIM_OK;
}

void ToInfo(const trim::StreamPlan& p, sd_trim_stream_plan_info* info) {
  if (info == nullptr) return;
  info->resident_bytes = p.resident_bytes;
  info->ring_bytes = p.ring_bytes;
  info->streamed_bytes = p.streamed_bytes;
  info->compute_seconds = p.compute_seconds;
  info->bound_seconds = p.bound_seconds;
  info->simulated_step_seconds = p.simulated.step_seconds;
  info->lookahead = p.simulated.lookahead;
}

}  // namespace

int sd_trim_stream_plan(size_t n, const uint64_t* bytes, const double* seconds, uint64_t budget,
                        double link_bytes_per_second, uint8_t* resident,
                        sd_trim_stream_plan_info* info) {
  try {
    trim::StreamPlan plan;
    if (int rc = Plan(n, bytes, seconds, budget, link_bytes_per_second, &plan); rc != SD_TRIM_OK) {
      return rc;
    }
    if (resident != nullptr) std::copy(plan.resident.begin(), plan.resident.end(), resident);
    ToInfo(plan, info);
    return SD_TRIM_OK;
  } catch (const std::bad_alloc&) {
    t_last_error = "out of memory";
    return SD_TRIM_ENOSPACE;
  }
}

int sd_trim_stream_create_host(size_t n, const uint64_t* bytes, const double* seconds,
                               const void* const* host, uint64_t budget,
                               double link_bytes_per_second, sd_trim_stream** out) {
  if (out == nullptr || host == nullptr) return Invalid("out or host is NULL");
  *out = nullptr;
  try {
    auto s = std::make_unique<sd_trim_stream>();
    if (int rc = Plan(n, bytes, seconds, budget, link_bytes_per_second, &s->plan);
        rc != SD_TRIM_OK) {
      return rc;
    }
    s->host_ring.resize(s->plan.ring_bytes);
    std::vector<trim::StreamUnit> su;
    for (size_t i = 0; i < n; ++i) {
      if (host[i] == nullptr && bytes[i] > 0) return Invalid("a unit's host bytes are NULL");
      // On a host a resident unit is used where it is.
      su.push_back({host[i], const_cast<void*>(host[i]), bytes[i]});
    }
    s->device = std::make_unique<trim::HostStreamDevice>();
    s->executor = std::make_unique<trim::StreamExecutor>(s->plan, std::move(su),
                                                         s->host_ring.data(), *s->device);
    *out = s.release();
    return SD_TRIM_OK;
  } catch (const std::bad_alloc&) {
    t_last_error = "out of memory";
    return SD_TRIM_ENOSPACE;
  }
}

int sd_trim_stream_create_cuda(size_t n, const uint64_t* bytes, const double* seconds,
                               const void* const* host, void* const* resident, void* ring,
                               uint64_t ring_bytes, uint64_t budget, double link_bytes_per_second,
                               int device, void* compute_stream, sd_trim_stream** out) {
  if (out == nullptr || host == nullptr || resident == nullptr) {
    return Invalid("out, host or resident is NULL");
  }
  *out = nullptr;
  try {
    auto s = std::make_unique<sd_trim_stream>();
    if (int rc = Plan(n, bytes, seconds, budget, link_bytes_per_second, &s->plan);
        rc != SD_TRIM_OK) {
      return rc;
    }
    if (ring == nullptr && s->plan.ring_bytes > 0) return Invalid("ring is NULL");
    if (ring_bytes < s->plan.ring_bytes) {
      return Invalid(("ring_bytes " + std::to_string(ring_bytes) + " is less than the plan's " +
                      std::to_string(s->plan.ring_bytes) + " (sd_trim_stream_plan says it)")
                         .c_str());
    }
    std::vector<trim::StreamUnit> su;
    for (size_t i = 0; i < n; ++i) {
      if (bytes[i] > 0 && host[i] == nullptr) return Invalid("a unit's host bytes are NULL");
      if (bytes[i] > 0 && s->plan.resident[i] && resident[i] == nullptr) {
        t_last_error = "unit " + std::to_string(i) +
                       " stays resident in the plan, but its resident memory is NULL";
        return SD_TRIM_EINVAL;
      }
      su.push_back({host[i], s->plan.resident[i] ? resident[i] : nullptr, bytes[i]});
    }
    if (Status st = trim::CheckCudaStreamMemory(device, host, resident, n, ring); !st.ok()) {
      return Code(st);
    }
    auto d = trim::MakeCudaStreamDevice(device, compute_stream);
    if (!d) return Code(d.error());
    s->device = std::move(d).value();
    s->executor = std::make_unique<trim::StreamExecutor>(s->plan, std::move(su), ring, *s->device);
    *out = s.release();
    return SD_TRIM_OK;
  } catch (const std::bad_alloc&) {
    t_last_error = "out of memory";
    return SD_TRIM_ENOSPACE;
  }
}

int sd_trim_stream_begin(sd_trim_stream* s, size_t unit, const void** ptr) {
  if (s == nullptr || ptr == nullptr) return Invalid("stream or ptr is NULL");
  std::lock_guard<std::mutex> lock(s->mu);
  auto p = s->executor->Begin(unit);
  if (!p) return Code(p.error());
  *ptr = *p;
  return SD_TRIM_OK;
}

int sd_trim_stream_end(sd_trim_stream* s, size_t unit) {
  if (s == nullptr) return Invalid("stream is NULL");
  std::lock_guard<std::mutex> lock(s->mu);
  return Code(s->executor->End(unit));
}

void sd_trim_stream_get_info(const sd_trim_stream* s, sd_trim_stream_plan_info* info) {
  if (s == nullptr || info == nullptr) return;
  std::lock_guard<std::mutex> lock(s->mu);
  ToInfo(s->plan, info);
}

void sd_trim_stream_get_stats(const sd_trim_stream* s, sd_trim_stream_stats* out) {
  if (s == nullptr || out == nullptr) return;
  std::lock_guard<std::mutex> lock(s->mu);
  const trim::StreamExecutorStats& st = s->executor->stats();
  out->copies = st.copies;
  out->bytes_copied = st.bytes_copied;
  out->issued_at_begin = st.issued_at_begin;
  out->host_waits = s->device->host_waits();
  out->order_misses = st.order_misses;
  out->most_ahead = st.most_ahead;
}

void sd_trim_stream_destroy(sd_trim_stream* s) { delete s; }
