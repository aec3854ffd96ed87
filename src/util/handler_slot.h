// HandlerSlot: memory for one outstanding Asio operation at a time (Asio's custom handler
// allocation). Operations started with a handler whose allocator is SlotAllocator take their
// memory from the slot instead of the heap; a larger or concurrent request falls back to the
// heap, so correctness never depends on the slot. Used where the code guarantees one
// operation at a time: a LoopSignal's post, an MQTT client's write.
#pragma once

#include <atomic>
#include <cstddef>
#include <new>
#include <utility>

namespace seedance::util {

class HandlerSlot {
 public:
  void* Allocate(std::size_t n) {
    if (n <= sizeof storage_ && !used_.exchange(true, std::memory_order_acquire)) return storage_;
    return ::operator new(n);
  }
  void Deallocate(void* p) {
    if (p == storage_)
      used_.store(false, std::memory_order_release);
    else
      ::operator delete(p);
  }

 private:
  alignas(std::max_align_t) unsigned char storage_[512];
  std::atomic<bool> used_{false};
};

// The allocator a handler names as its `allocator_type` (returned by get_allocator()).
template <typename T>
struct SlotAllocator {
  using value_type = T;
  HandlerSlot* slot;
  explicit SlotAllocator(HandlerSlot* s) : slot(s) {}
  template <typename U>
  SlotAllocator(const SlotAllocator<U>& other) : slot(other.slot) {}  // NOLINT: rebinding
  T* allocate(std::size_t n) { return static_cast<T*>(slot->Allocate(sizeof(T) * n)); }
  void deallocate(T* p, std::size_t) { slot->Deallocate(p); }
  template <typename U>
  bool operator==(const SlotAllocator<U>& other) const {
    return slot == other.slot;
  }
  template <typename U>
  bool operator!=(const SlotAllocator<U>& other) const {
    return slot != other.slot;
  }
};

// Wraps a completion handler so the operations it completes take their memory from `slot`.
template <typename Fn>
struct SlotHandler {
  HandlerSlot* slot;
  Fn fn;
  using allocator_type = SlotAllocator<char>;
  allocator_type get_allocator() const noexcept { return allocator_type(slot); }
  template <typename... Args>
  void operator()(Args&&... args) {
    fn(std::forward<Args>(args)...);
  }
};

}  // namespace seedance::util
