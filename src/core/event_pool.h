// EventPool: events with their strings' storage, from the processing thread back to the
// sources, so a source copies a message into storage it already has instead of allocating.
//
// Bounded: at most kMaxEvents events, each with a payload buffer of at most
// kMaxPayloadBytes and kMaxBytes of payload storage in all (what the pool holds is not counted
// by the memory budget). 128 events: 64 ran dry at 5k msg/s when a read brought more.
// Thread-safe.
#pragma once

#include <cstddef>
#include <mutex>
#include <vector>

#include "core/ingest_queue.h"
#include "seedance/event.h"

namespace seedance {

class EventPool {
 public:
  static constexpr size_t kMaxEvents = 128;
  static constexpr size_t kMaxPayloadBytes = 16 * 1024;  // larger buffers are not kept
  static constexpr size_t kMaxBytes = 1024 * 1024;

  // A pooled event (fields empty, storage kept), or a new one when the pool is empty.
  Event Take();
  // Keeps `event`'s storage if it fits the bounds; `event` is left empty or untouched.
  void Give(Event& event);
  // Give() for each item's event, under one lock (the processing thread, once per batch).
  void GiveAll(std::vector<IngestItem>& items);

  size_t size() const;
  size_t payload_bytes() const;  // payload capacity held

 private:
  void GiveLocked(Event& event);

  mutable std::mutex mu_;
  std::vector<Event> events_;
  size_t bytes_ = 0;
};

}  // namespace seedance
