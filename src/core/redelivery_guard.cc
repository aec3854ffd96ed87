#include "core/redelivery_guard.h"

#include <fmt/format.h>

#include <cstdlib>

#include "util/little_endian.h"

namespace seedance {
namespace {

bool SplitKey(const std::string& key, std::string* source, uint64_t* batch) {
  const size_t nl = key.find('\n');
  if (nl == std::string::npos) return false;
  *source = key.substr(0, nl);
  *batch = std::strtoull(key.c_str() + nl + 1, nullptr, 10);
  return true;
}

}  // namespace

void RedeliveryGuard::Restore(const storage::CheckpointLog::Entries& entries) {
  std::lock_guard<std::mutex> lock(mu_);
  struct Found {
    uint64_t fingerprint;
    uint64_t batch;
  };
  std::map<std::string, std::map<uint16_t, Found>> found;  // newest batch of each id wins
  auto note = [&](const std::string& component, const std::string& key, uint64_t batch,
                  const std::string& source) {
    batches_[batch] = BatchRecord{component, key, 0};
    next_batch_ = std::max(next_batch_, batch + 1);
    return &found[source];
  };
  if (auto it = entries.find(kComponent); it != entries.end()) {
    for (const auto& [key, value] : it->second) {
      std::string source;
      uint64_t batch = 0;
      if (!SplitKey(key, &source, &batch)) continue;
      auto* ids = note(kComponent, key, batch, source);
      for (size_t pos = 0; pos + 10 <= value.size(); pos += 10) {
        const uint16_t id = util::GetFixed16(value.data() + pos);
        const uint64_t fp = util::GetFixed64(value.data() + pos + 2);
        auto [f, inserted] = ids->try_emplace(id, Found{fp, batch});
        if (!inserted && f->second.batch < batch) f->second = Found{fp, batch};
      }
    }
  }
  // Older records: batch numbers shared the same counter, so they order with the new ones.
  if (auto it = entries.find(kLegacyComponent); it != entries.end()) {
    for (const auto& [key, value] : it->second) {
      std::string source;
      uint64_t batch = 0;
      if (!SplitKey(key, &source, &batch) || value.size() < 8) continue;
      auto* ids = note(kLegacyComponent, key, batch, source);
      for (size_t pos = 8; pos + 2 <= value.size(); pos += 2) {
        const uint16_t id = util::GetFixed16(value.data() + pos);
        auto [f, inserted] = ids->try_emplace(id, Found{kAnyFingerprint, batch});
        if (!inserted && f->second.batch < batch) f->second = Found{kAnyFingerprint, batch};
      }
    }
  }
  for (const auto& [source, ids] : found) {
    SourceState& s = sources_[source];
    for (const auto& [id, f] : ids) {
      s.unconfirmed[id] = Unconfirmed{f.fingerprint, f.batch};
      ++batches_[f.batch].live;
    }
  }
  for (auto it = batches_.begin(); it != batches_.end();) {
    if (it->second.live == 0) {  // every id of it was used again by a newer batch
      to_delete_.emplace_back(it->second.component, it->second.key);
      it = batches_.erase(it);
    } else {
      ++it;
    }
  }
}

void RedeliveryGuard::Release(SourceState& s, uint16_t id) {
  auto it = s.unconfirmed.find(id);
  if (it == s.unconfirmed.end()) return;
  auto b = batches_.find(it->second.batch);
  if (b != batches_.end() && --b->second.live == 0) {
    to_delete_.emplace_back(std::move(b->second.component), std::move(b->second.key));
    batches_.erase(b);
  }
  s.unconfirmed.erase(it);
}

void RedeliveryGuard::Commit(const std::map<std::string, std::vector<uint16_t>>& ids_by_source,
                             storage::CheckpointLog& log) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [source, ids] : ids_by_source) {
    if (ids.empty()) continue;
    SourceState& s = sources_[source];
    const uint64_t batch = next_batch_++;
    std::string value;
    value.reserve(ids.size() * 10);
    size_t live = 0;
    for (uint16_t id : ids) {
      if (auto u = s.unconfirmed.find(id); u != s.unconfirmed.end() && u->second.batch == batch) {
        continue;  // twice in one batch (it cannot be: a broker reuses an id only after our ack)
      }
      uint64_t fp = kAnyFingerprint;
      if (auto p = s.in_pipeline.find(id); p != s.in_pipeline.end()) {
        fp = p->second.fingerprint;
        for (auto& ack : p->second.acks) ready_acks_.push_back(std::move(ack));
        s.in_pipeline.erase(p);
      }
      Release(s, id);  // an older entry of the id: the broker reused it, so it was confirmed
      s.unconfirmed[id] = Unconfirmed{fp, batch};
      util::PutFixed16(value, id);
      util::PutFixed64(value, fp);
      ++live;
    }
    std::string key = fmt::format("{}\n{}", source, batch);
    log.Put(kComponent, key, value);
    batches_[batch] = BatchRecord{kComponent, std::move(key), live};
  }
  for (const auto& [component, key] : to_delete_) log.Put(component, key, "");
  to_delete_.clear();
}

std::vector<std::function<void()>> RedeliveryGuard::TakeReadyAcks() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::function<void()>> out;
  out.swap(ready_acks_);
  return out;
}

RedeliveryFilter::Verdict RedeliveryGuard::Admit(const std::string& source, uint16_t packet_id,
                                                 bool dup, uint64_t fingerprint,
                                                 const std::function<void()>& ack_when_committed) {
  std::lock_guard<std::mutex> lock(mu_);
  SourceState& s = sources_[source];
  if (dup) {
    if (auto u = s.unconfirmed.find(packet_id); u != s.unconfirmed.end()) {
      if (u->second.fingerprint == fingerprint || u->second.fingerprint == kAnyFingerprint) {
        ++suppressed_;
        return Verdict::kCommitted;  // stays unconfirmed until this copy's PUBACK is
      }
    }
    if (auto p = s.in_pipeline.find(packet_id);
        p != s.in_pipeline.end() && p->second.fingerprint == fingerprint) {
      p->second.acks.push_back(ack_when_committed);
      ++suppressed_;
      return Verdict::kInPipeline;
    }
  }
  // A new message: the broker may use an id again only once it had our acknowledgement of
  // the message that held it before, so an entry of that one is confirmed.
  Release(s, packet_id);
  s.in_pipeline.try_emplace(packet_id, InPipeline{fingerprint, {}});
  return Verdict::kNew;
}

void RedeliveryGuard::Withdraw(const std::string& source, uint16_t packet_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sources_.find(source);
  if (it == sources_.end()) return;
  auto p = it->second.in_pipeline.find(packet_id);
  if (p != it->second.in_pipeline.end() && p->second.acks.empty()) {
    it->second.in_pipeline.erase(p);
  }
}

void RedeliveryGuard::Confirmed(const std::string& source,
                                const std::vector<uint16_t>& packet_ids) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sources_.find(source);
  if (it == sources_.end()) return;
  for (uint16_t id : packet_ids) Release(it->second, id);
}

bool RedeliveryGuard::HasUnconfirmed(const std::string& source) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sources_.find(source);
  return it != sources_.end() && !it->second.unconfirmed.empty();
}

size_t RedeliveryGuard::suppressed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return suppressed_;
}

size_t RedeliveryGuard::unconfirmed() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [name, s] : sources_) n += s.unconfirmed.size();
  return n;
}

size_t RedeliveryGuard::batch_records() const {
  std::lock_guard<std::mutex> lock(mu_);
  return batches_.size();
}

}  // namespace seedance
