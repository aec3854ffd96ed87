// OrderedEvents: the event handles of one stream, reused without waiting (weight streaming on
// CUDA, trim/cuda/cuda_stream_device.h). Events recorded on one stream pass in the order they
// were recorded, so once the oldest live event has passed, every earlier id has too: its handle
// can take the next id, and a later wait for any id up to it is a wait for nothing. A new handle
// is made only while every live one is still pending (warm-up); in steady state the set stays
// as large as the most events ever pending at once, and nothing is created on the hot path.
// Ids start at 1 and grow by one per Record.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>

namespace seedance::trim {

class OrderedEvents {
 public:
  struct Recorded {
    uint64_t id = 0;
    size_t slot = 0;        // the handle to record into
    bool new_slot = false;  // the caller makes that handle first (slot == slots() - 1)
  };
  // The next id, in the oldest handle if `passed(slot)` says that handle's event has passed
  // (one query at most per call), else in a new handle.
  Recorded Record(const std::function<bool(size_t slot)>& passed);
  // The handle of `id` to wait for; nullopt when `id` is 0 or has passed for certain.
  // REQUIRES: id < the next id.
  std::optional<size_t> Find(uint64_t id) const;

  size_t slots() const { return slots_; }
  uint64_t passed_through() const { return passed_through_; }

 private:
  struct Live {
    uint64_t id;
    size_t slot;
  };
  std::deque<Live> live_;  // ids in order, contiguous
  uint64_t next_id_ = 1;
  uint64_t passed_through_ = 0;  // every id up to it has passed
  size_t slots_ = 0;
};

}  // namespace seedance::trim
