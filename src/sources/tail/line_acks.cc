#include "sources/tail/line_acks.h"

namespace seedance::sources {

uint64_t LineAcks::Register(const StoredLine& line) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t token = next_token_++;
  in_flight_[token] = line;
  return token;
}

void LineAcks::Withdraw(uint64_t token) {
  std::lock_guard<std::mutex> lock(mu_);
  in_flight_.erase(token);
  if (token + 1 == next_token_) --next_token_;
}

void LineAcks::Done(const StoredLine& line) {
  std::lock_guard<std::mutex> lock(mu_);
  stored_.push_back(line);
}

void LineAcks::Acknowledge(uint64_t token) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = in_flight_.find(token);
  if (it == in_flight_.end()) return;
  stored_.push_back(it->second);
  in_flight_.erase(it);
}

std::vector<StoredLine> LineAcks::TakeStored() {
  std::vector<StoredLine> out;
  std::lock_guard<std::mutex> lock(mu_);
  out.swap(stored_);
  return out;
}

}  // namespace seedance::sources
