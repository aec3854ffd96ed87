// The C API (seedance/trim_c.h) over seedance::trim::TierManager.
#include "seedance/trim_c.h"

#include <new>
#include <string>

#include "seedance/trim.h"

struct sd_trim_manager {
  std::unique_ptr<seedance::trim::TierManager> manager;
  std::string last_error;
};

namespace {

using seedance::Status;
using seedance::StatusCode;

int Code(sd_trim_manager* m, const Status& s) {
  if (s.ok()) return SD_TRIM_OK;
  m->last_error = s.message();
  switch (s.code()) {
    case StatusCode::kInvalidArgument:
      return SD_TRIM_EINVAL;
    case StatusCode::kNotFound:
      return SD_TRIM_ENOTFOUND;
    case StatusCode::kResourceExhausted:
      return SD_TRIM_ENOSPACE;
    case StatusCode::kFailedPrecondition:
      return SD_TRIM_EBUSY;
    default:
      return SD_TRIM_EINTERNAL;
  }
}

seedance::trim::PolicyOptions ToOptions(const sd_trim_policy* p) {
  seedance::trim::PolicyOptions o;
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

}  // namespace

extern "C" {

void sd_trim_policy_defaults(sd_trim_policy* policy) {
  const seedance::trim::PolicyOptions o;
  *policy = sd_trim_policy{o.occupancy_trigger,     o.occupancy_samples, o.idle_share_trigger,
                           o.idle_steps,            o.fragmentation_trigger,
                           o.min_victim_bytes,      o.low_watermark,
                           o.async_copies ? 1 : 0};
}

sd_trim_manager* sd_trim_create_host(uint64_t fast_capacity, uint64_t slow_capacity,
                                     const sd_trim_policy* policy) {
  try {
    std::vector<std::unique_ptr<seedance::trim::Tier>> tiers;
    tiers.push_back(seedance::trim::MakeHostTier("fast", fast_capacity));
    tiers.push_back(seedance::trim::MakeHostTier("slow", slow_capacity));
    auto manager = seedance::trim::TierManager::Create(std::move(tiers), ToOptions(policy));
    if (!manager) return nullptr;
    return new sd_trim_manager{std::move(manager).value(), {}};
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}

void sd_trim_destroy(sd_trim_manager* manager) { delete manager; }

int sd_trim_register(sd_trim_manager* m, uint64_t size, const char* name, const char* group,
                     sd_trim_buffer* id) {
  if (m == nullptr || id == nullptr) return SD_TRIM_EINVAL;
  auto r = m->manager->Register(size, name ? name : "", group ? group : "");
  if (!r) return Code(m, r.error());
  *id = *r;
  return SD_TRIM_OK;
}

int sd_trim_unregister(sd_trim_manager* m, sd_trim_buffer id) {
  if (m == nullptr) return SD_TRIM_EINVAL;
  return Code(m, m->manager->Unregister(id));
}

int sd_trim_acquire(sd_trim_manager* m, sd_trim_buffer id, void** ptr) {
  if (m == nullptr || ptr == nullptr) return SD_TRIM_EINVAL;
  auto r = m->manager->Acquire(id);
  if (!r) return Code(m, r.error());
  *ptr = *r;
  return SD_TRIM_OK;
}

int sd_trim_acquire_read(sd_trim_manager* m, sd_trim_buffer id, const void** ptr) {
  if (m == nullptr || ptr == nullptr) return SD_TRIM_EINVAL;
  auto r = m->manager->AcquireRead(id);
  if (!r) return Code(m, r.error());
  *ptr = *r;
  return SD_TRIM_OK;
}

int sd_trim_release(sd_trim_manager* m, sd_trim_buffer id) {
  if (m == nullptr) return SD_TRIM_EINVAL;
  return Code(m, m->manager->Release(id));
}

void sd_trim_step(sd_trim_manager* m) {
  if (m != nullptr) m->manager->Step();
}

int sd_trim_prefetch(sd_trim_manager* m, sd_trim_buffer id) {
  if (m == nullptr) return SD_TRIM_EINVAL;
  return Code(m, m->manager->Prefetch(id));
}

size_t sd_trim_trim(sd_trim_manager* m) { return m == nullptr ? 0 : m->manager->Trim(); }

int sd_trim_tier_of(sd_trim_manager* m, sd_trim_buffer id, int* tier) {
  if (m == nullptr || tier == nullptr) return SD_TRIM_EINVAL;
  auto r = m->manager->TierOf(id);
  if (!r) return Code(m, r.error());
  *tier = *r;
  return SD_TRIM_OK;
}

void sd_trim_get_stats(const sd_trim_manager* m, sd_trim_stats* out) {
  if (m == nullptr || out == nullptr) return;
  const seedance::trim::TrimStats s = m->manager->Stats();
  *out = sd_trim_stats{};
  out->step = s.step;
  out->buffers = s.buffers;
  out->registered_bytes = s.registered_bytes;
  if (!s.tiers.empty()) {
    out->fast_used = s.tiers[0].used;
    out->fast_capacity = s.tiers[0].capacity;
    out->fast_fragmentation = s.tiers[0].fragmentation;
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
}

const char* sd_trim_last_error(const sd_trim_manager* m) {
  return m == nullptr ? "null manager" : m->last_error.c_str();
}

}  // extern "C"
