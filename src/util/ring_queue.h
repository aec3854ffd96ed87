// RingQueue: a FIFO on one growable array. Unlike std::deque it allocates only when it grows
// past its largest size so far (std::deque allocates and frees a block every few elements as
// it moves along), so a queue in steady state makes no heap allocation. Popped slots hold
// moved-from values until reused; once empty after a burst the array goes back to a small size
// (a burst's memory is not kept). Not thread-safe.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace seedance::util {

template <typename T>
class RingQueue {
 public:
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  T& front() { return slots_[head_]; }
  void push_back(T&& value) {
    if (size_ == slots_.size()) Grow();
    slots_[(head_ + size_) % slots_.size()] = std::move(value);
    ++size_;
  }
  void pop_front() {
    head_ = (head_ + 1) % slots_.size();
    --size_;
    if (size_ == 0 && slots_.size() > kKeepSlots) {
      slots_ = std::vector<T>(kInitialSlots);
      head_ = 0;
    }
  }
  void clear() {
    while (!empty()) {
      front() = T();
      pop_front();
    }
  }

 private:
  static constexpr size_t kInitialSlots = 16;
  static constexpr size_t kKeepSlots = 1024;

  void Grow() {
    std::vector<T> bigger(slots_.empty() ? kInitialSlots : slots_.size() * 2);
    for (size_t i = 0; i < size_; ++i) bigger[i] = std::move(slots_[(head_ + i) % slots_.size()]);
    slots_ = std::move(bigger);
    head_ = 0;
  }

  std::vector<T> slots_;
  size_t head_ = 0;
  size_t size_ = 0;
};

}  // namespace seedance::util
