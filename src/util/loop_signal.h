// LoopSignal: wakes a function on the event loop from any thread, without allocating.
//
// Notify() posts the function to the loop unless a post is already pending: a burst of
// notifications runs it once, after the last of them was made (the pending flag is cleared
// just before it runs). The posted operation's memory comes from a slot inside the signal
// (Asio's custom handler allocation), so a steady stream of wake-ups makes no heap
// allocation — the hot path's sink kicks and MQTT acknowledgements go through here.
//
// Lifetime: the slot lives in shared state the pending operation holds, so destroying the
// io_context with a wake-up still queued is safe; the function itself must not run after its
// owner is gone (owners stop the loop first, as Pipeline does).
#pragma once

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp needs std::exchange

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>

#include "util/handler_slot.h"

namespace seedance::util {

class LoopSignal {
 public:
  LoopSignal(boost::asio::io_context& io, std::function<void()> fn)
      : io_(io), state_(std::make_shared<State>(std::move(fn))) {}

  // Any thread.
  void Notify() {
    if (!state_->pending.exchange(true, std::memory_order_acq_rel)) {
      boost::asio::post(io_, Handler{state_});
    }
  }

 private:
  struct State {
    explicit State(std::function<void()> f) : fn(std::move(f)) {}
    std::function<void()> fn;
    std::atomic<bool> pending{false};
    HandlerSlot slot;  // one pending post at a time (Notify coalesces)
  };

  struct Handler {
    std::shared_ptr<State> state;
    using allocator_type = SlotAllocator<Handler>;
    allocator_type get_allocator() const { return allocator_type(&state->slot); }
    void operator()() const {
      state->pending.store(false, std::memory_order_release);
      state->fn();
    }
  };

  boost::asio::io_context& io_;
  std::shared_ptr<State> state_;
};

}  // namespace seedance::util
