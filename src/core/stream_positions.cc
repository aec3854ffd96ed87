#include "core/stream_positions.h"

#include "util/clock.h"
#include "util/little_endian.h"

namespace seedance {

StreamPositions::StreamPositions(std::function<int64_t()> now_ns)
    : now_ns_(now_ns ? std::move(now_ns) : std::function<int64_t()>(util::WallNowNs)) {}

void StreamPositions::Restore(const storage::CheckpointLog::Entries& entries) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries.find(kComponent);
  if (it == entries.end()) return;
  for (const auto& [key, value] : it->second) {
    if (value.size() < 16) continue;
    Record r;
    r.committed.offset = util::GetFixed64(value.data());
    r.committed.head_crc = util::GetFixed32(value.data() + 8);
    r.committed.head_bytes = util::GetFixed32(value.data() + 12);
    if (value.size() >= 24)
      r.expires_ns = static_cast<int64_t>(util::GetFixed64(value.data() + 16));
    if (r.expires_ns != 0) expiries_.emplace(r.expires_ns, key);
    records_[key] = r;
  }
}

uint32_t StreamPositions::OpenStream(const std::string& source, const std::string& key,
                                     std::chrono::nanoseconds keep) {
  std::lock_guard<std::mutex> lock(mu_);
  Stream s;
  s.record = source + "\n" + key;
  s.epoch = ++epochs_[s.record];
  s.keep_ns = keep.count();
  const uint32_t id = next_stream_++;
  streams_.emplace(id, std::move(s));
  return id;
}

void StreamPositions::ReleaseStream(uint32_t stream) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = streams_.find(stream);
  if (it == streams_.end()) return;
  auto e = epochs_.find(it->second.record);
  if (e != epochs_.end() && e->second == it->second.epoch && !records_.count(e->first)) {
    epochs_.erase(e);  // nothing committed: nothing to order against
  }
  streams_.erase(it);
}

void StreamPositions::SetHead(uint32_t stream, uint32_t head_crc, uint32_t head_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = streams_.find(stream);
  if (it == streams_.end()) return;
  it->second.head_crc = head_crc;
  it->second.head_bytes = head_bytes;
}

void StreamPositions::CloseStream(uint32_t stream) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = streams_.find(stream);
  if (it == streams_.end()) return;
  if (epochs_[it->second.record] == it->second.epoch) {
    to_delete_.push_back(it->second.record);
    epochs_.erase(it->second.record);
  }
  streams_.erase(it);
}

bool StreamPositions::Find(const std::string& source, const std::string& key,
                           Committed* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = records_.find(source + "\n" + key);
  if (it == records_.end()) return false;
  if (it->second.expires_ns != 0 && it->second.expires_ns <= now_ns_()) return false;
  *out = it->second.committed;
  return true;
}

size_t StreamPositions::records() const {
  std::lock_guard<std::mutex> lock(mu_);
  return records_.size();
}

void StreamPositions::Note(uint32_t stream, uint64_t end) { noted_.emplace_back(stream, end); }

void StreamPositions::Delete(const std::string& record, storage::CheckpointLog& log) {
  if (records_.erase(record) != 0) log.Put(kComponent, record, "");
}

void StreamPositions::Commit(storage::CheckpointLog& log) {
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t now = now_ns_();
  std::map<std::string, const Record*> changed;
  for (const auto& [id, end] : noted_) {
    auto s = streams_.find(id);
    if (s == streams_.end()) continue;
    Record& r = records_[s->second.record];
    if (s->second.epoch < r.epoch) continue;  // a line from before a truncation, committed late
    r.epoch = s->second.epoch;
    r.committed = Committed{end, s->second.head_crc, s->second.head_bytes};
    if (s->second.keep_ns > 0) {
      r.expires_ns = now + s->second.keep_ns;
      expiries_.emplace(r.expires_ns, s->second.record);
    }
    changed[s->second.record] = &r;
  }
  noted_.clear();
  std::string value;
  for (const auto& [record, r] : changed) {
    value.clear();
    util::PutFixed64(value, r->committed.offset);
    util::PutFixed32(value, r->committed.head_crc);
    util::PutFixed32(value, r->committed.head_bytes);
    util::PutFixed64(value, static_cast<uint64_t>(r->expires_ns));
    log.Put(kComponent, record, value);
  }
  for (const std::string& record : to_delete_) Delete(record, log);
  to_delete_.clear();
  // Expired records (an entry whose record was committed again later is stale: skipped), and
  // beyond kMaxExpiring the soonest to expire.
  while (!expiries_.empty() &&
         (expiries_.begin()->first <= now || expiries_.size() > kMaxExpiring)) {
    auto e = expiries_.begin();
    auto r = records_.find(e->second);
    if (r != records_.end() && r->second.expires_ns == e->first) Delete(e->second, log);
    expiries_.erase(e);
  }
}

}  // namespace seedance
