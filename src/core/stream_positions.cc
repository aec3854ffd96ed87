#include "core/stream_positions.h"

#include "util/little_endian.h"

namespace seedance {

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
    records_[key] = r;
  }
}

uint32_t StreamPositions::OpenStream(const std::string& source, const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  Stream s;
  s.record = source + "\n" + key;
  s.epoch = ++epochs_[s.record];
  streams_.push_back(std::move(s));
  return static_cast<uint32_t>(streams_.size() - 1);
}

void StreamPositions::SetHead(uint32_t stream, uint32_t head_crc, uint32_t head_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stream == 0 || stream >= streams_.size()) return;
  streams_[stream].head_crc = head_crc;
  streams_[stream].head_bytes = head_bytes;
}

void StreamPositions::CloseStream(uint32_t stream) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stream == 0 || stream >= streams_.size()) return;
  Stream& s = streams_[stream];
  s.closed = true;
  if (epochs_[s.record] == s.epoch) to_delete_.push_back(s.record);
}

bool StreamPositions::Find(const std::string& source, const std::string& key,
                           Committed* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = records_.find(source + "\n" + key);
  if (it == records_.end()) return false;
  *out = it->second.committed;
  return true;
}

void StreamPositions::Note(uint32_t stream, uint64_t end) { noted_.emplace_back(stream, end); }

void StreamPositions::Commit(storage::CheckpointLog& log) {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, const Record*> changed;
  for (const auto& [id, end] : noted_) {
    if (id == 0 || id >= streams_.size()) continue;
    const Stream& s = streams_[id];
    Record& r = records_[s.record];
    if (s.epoch < r.epoch) continue;  // a line from before a truncation, committed late
    r.epoch = s.epoch;
    r.committed = Committed{end, s.head_crc, s.head_bytes};
    changed[s.record] = &r;
  }
  noted_.clear();
  std::string value;
  for (const auto& [record, r] : changed) {
    value.clear();
    util::PutFixed64(value, r->committed.offset);
    util::PutFixed32(value, r->committed.head_crc);
    util::PutFixed32(value, r->committed.head_bytes);
    log.Put(kComponent, record, value);
  }
  for (const std::string& record : to_delete_) {
    log.Put(kComponent, record, "");
    records_.erase(record);
  }
  to_delete_.clear();
}

}  // namespace seedance
