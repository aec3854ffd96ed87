// StreamRing: where streamed units land in device memory (weight streaming, issue 41). Units
// are placed one after the other in a ring of fixed capacity, in the order they run; a unit's
// region is released when its compute has been issued, with the event that passes once that
// compute is done. A new placement may reuse only released bytes, and says which event it must
// wait for (on the device, never the host) before its copy may write them.
//
// Positions are virtual and only grow (a placement never straddles the ring's end: it starts at
// the next lap instead); a byte at virtual position v lives at offset v mod capacity. The bytes
// a placement at [v, v + n) overwrites are those of [v − capacity, v + n − capacity).
//
// Events are ordered: a later one passes after an earlier one (they are recorded on one
// compute stream, or are times in a simulation), so waiting for the largest is enough.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>

namespace seedance::trim {

class StreamRing {
 public:
  StreamRing(uint64_t capacity, uint64_t alignment);

  struct Placement {
    uint64_t offset = 0;  // in the ring
    uint64_t after = 0;   // the event to wait for before writing (0: nothing to wait for)
  };
  // Places `bytes` (rounded up to the alignment) after the last placement. nullopt when it does
  // not fit (larger than the ring) or needs bytes whose region is not released yet.
  std::optional<Placement> Place(uint64_t bytes);
  // Releases the oldest placed region (REQUIRES: one is live): free once `event` has passed.
  void ReleaseOldest(uint64_t event);

  uint64_t capacity() const { return capacity_; }
  size_t live() const { return live_.size(); }

 private:
  struct Region {
    uint64_t begin;  // virtual
    uint64_t end;
    uint64_t event;  // released regions: the event after which they are free
  };
  uint64_t capacity_;
  uint64_t alignment_;
  uint64_t head_ = 0;            // virtual position of the next placement
  std::deque<Region> live_;      // placed, not released, in order
  std::deque<Region> released_;  // released, some bytes not yet overwritten, in order
};

}  // namespace seedance::trim
