// HandlerSlot: memory for the operations of one chain of Asio operations (Asio's custom handler
// allocation): a few blocks, because a composed operation may keep state in one while its
// socket operation takes another. Operations started with a handler whose allocator is
// SlotAllocator take their memory from here instead of the heap; a larger request, or one when
// every block is taken, falls back to the heap, so correctness never depends on the blocks.
// Used where the code runs one chain at a time: a LoopSignal's post, an MQTT client's write,
// an HTTP delivery.
//
// Lifetime: an operation still queued when its owner is destroyed is destroyed later, with
// the io_context, and frees its memory then; so a slot is shared (SharedSlot), and every
// handler holds it. Freeing a slot inside its owner while an operation was queued was a
// use-after-free at shutdown (found by the ASan build, scripts/test --sanitize).
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <new>
#include <utility>

namespace seedance::util {

class HandlerSlot {
 public:
  void* Allocate(std::size_t n) {
    if (n <= kBlockSize) {
      for (int i = 0; i < kBlocks; ++i) {
        if (!used_[i].exchange(true, std::memory_order_acquire)) return blocks_[i];
      }
    }
    return ::operator new(n);
  }
  void Deallocate(void* p) {
    for (int i = 0; i < kBlocks; ++i) {
      if (p == blocks_[i]) {
        used_[i].store(false, std::memory_order_release);
        return;
      }
    }
    ::operator delete(p);
  }

 private:
  static constexpr int kBlocks = 4;
  static constexpr std::size_t kBlockSize = 512;
  alignas(std::max_align_t) unsigned char blocks_[kBlocks][kBlockSize];
  std::atomic<bool> used_[kBlocks] = {};
};

using SharedSlot = std::shared_ptr<HandlerSlot>;
inline SharedSlot MakeSlot() { return std::make_shared<HandlerSlot>(); }

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
// Asio frees an operation's memory through a copy of its handler, so the slot outlives it.
template <typename Fn>
struct SlotHandler {
  SharedSlot slot;
  Fn fn;
  using allocator_type = SlotAllocator<char>;
  allocator_type get_allocator() const noexcept { return allocator_type(slot.get()); }
  template <typename... Args>
  void operator()(Args&&... args) {
    fn(std::forward<Args>(args)...);
  }
};

}  // namespace seedance::util
