#include "core/redelivery_guard.h"

#include <fmt/format.h>

#include "util/little_endian.h"

namespace seedance {

// An entry: key "<source>\n<batch number>", value [i64 commit time][u16 packet id]...

void RedeliveryGuard::Restore(const storage::CheckpointLog::Entries& entries, int64_t now_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries.find(kComponent);
  if (it == entries.end()) return;
  for (const auto& [key, value] : it->second) {
    const size_t nl = key.find('\n');
    if (nl == std::string::npos || value.size() < 8) continue;
    auto& ids = restored_[key.substr(0, nl)];
    for (size_t pos = 8; pos + 2 <= value.size(); pos += 2) {
      ids.insert(util::GetFixed16(value.data() + pos));
    }
    // Keep the record until this run's own expiry, in case it dies again before redelivery.
    batches_.push_back(Batch{now_ns, key});
    next_batch_ =
        std::max<uint64_t>(next_batch_, std::strtoull(key.c_str() + nl + 1, nullptr, 10) + 1);
  }
}

void RedeliveryGuard::Commit(const std::map<std::string, std::vector<uint16_t>>& ids_by_source,
                             int64_t now_ns, storage::CheckpointLog& log) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [source, ids] : ids_by_source) {
    if (ids.empty()) continue;
    std::string key = fmt::format("{}\n{}", source, next_batch_++);
    std::string value;
    util::PutFixed64(value, static_cast<uint64_t>(now_ns));
    for (uint16_t id : ids) util::PutFixed16(value, id);
    log.Put(kComponent, key, value);
    batches_.push_back(Batch{now_ns, std::move(key)});
  }
  while (!batches_.empty() && now_ns - batches_.front().at_ns > kKeepNs) {
    log.Put(kComponent, batches_.front().key, "");
    batches_.pop_front();
  }
}

bool RedeliveryGuard::Skip(const std::string& source, uint16_t packet_id, bool dup) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = restored_.find(source);
  if (it == restored_.end() || it->second.erase(packet_id) == 0) return false;
  if (!dup) return false;  // a new message reusing the id: the old one was acknowledged
  ++suppressed_;
  return true;
}

size_t RedeliveryGuard::suppressed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return suppressed_;
}

}  // namespace seedance
