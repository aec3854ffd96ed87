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
//
// WakeBatcher: while a WakeBatcher::Scope is alive on a thread, the Notify() calls that thread
// makes for signals of the batcher's io_context are collected and reach the loop as one
// operation when the scope ends. The processing thread wraps each batch in a scope, so its
// acknowledgements and sink kicks wake the event loop once per batch, not once per signal.
#pragma once

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp needs std::exchange

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "util/handler_slot.h"

namespace seedance::util {

class WakeBatcher;

class LoopSignal {
 public:
  LoopSignal(boost::asio::io_context& io, std::function<void()> fn)
      : io_(io), state_(std::make_shared<State>(std::move(fn))) {}

  // Any thread.
  inline void Notify();

 private:
  friend class WakeBatcher;
  // Notify() that is never collected by a WakeBatcher.
  void NotifyNow() {
    if (!state_->pending.exchange(true, std::memory_order_acq_rel)) {
      boost::asio::post(io_, Handler{state_});
    }
  }
  struct State {
    explicit State(std::function<void()> f) : fn(std::move(f)) {}
    void Run() {
      pending.store(false, std::memory_order_release);
      fn();
    }
    std::function<void()> fn;
    std::atomic<bool> pending{false};
    HandlerSlot slot;  // one pending post at a time (Notify coalesces)
  };

  struct Handler {
    std::shared_ptr<State> state;
    using allocator_type = SlotAllocator<Handler>;
    allocator_type get_allocator() const { return allocator_type(&state->slot); }
    void operator()() const { state->Run(); }
  };

  boost::asio::io_context& io_;
  std::shared_ptr<State> state_;
};

class WakeBatcher {
 public:
  explicit WakeBatcher(boost::asio::io_context& io)
      : io_(io), deliver_(io, [this] { Deliver(); }) {}
  WakeBatcher(const WakeBatcher&) = delete;
  WakeBatcher& operator=(const WakeBatcher&) = delete;

  // Collects this thread's Notify() calls until it ends. Scopes do not nest.
  class Scope {
   public:
    explicit Scope(WakeBatcher* batcher) : batcher_(batcher) {
      if (batcher_ != nullptr) current_ = batcher_;
    }
    ~Scope() {
      if (batcher_ == nullptr) return;
      current_ = nullptr;
      batcher_->Flush();
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    WakeBatcher* batcher_;
  };

  // Delivers what this thread's scope collected so far. A thread about to wait for something
  // the loop does (room in a sink queue, disk space the sinks free) calls it first: the
  // wake-ups it made must not wait for the end of its scope, or it waits for ever.
  static void FlushCurrent() {
    if (current_ != nullptr) current_->Flush();
  }

 private:
  friend class LoopSignal;
  // The batcher collecting this thread's wake-ups for `io`, or null.
  static WakeBatcher* Collecting(const boost::asio::io_context& io) {
    return current_ != nullptr && &current_->io_ == &io ? current_ : nullptr;
  }
  void Add(std::shared_ptr<LoopSignal::State> state) {
    std::lock_guard<std::mutex> lock(mu_);
    collected_.push_back(std::move(state));
  }
  void Flush() {
    bool any;
    {
      std::lock_guard<std::mutex> lock(mu_);
      any = !collected_.empty();
    }
    if (any) deliver_.NotifyNow();
  }
  // On the loop: runs every collected signal (the two vectors keep their storage).
  void Deliver() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      delivering_.swap(collected_);
    }
    for (auto& state : delivering_) state->Run();
    delivering_.clear();
  }

  static inline thread_local WakeBatcher* current_ = nullptr;
  boost::asio::io_context& io_;
  std::mutex mu_;
  std::vector<std::shared_ptr<LoopSignal::State>> collected_;
  std::vector<std::shared_ptr<LoopSignal::State>> delivering_;  // loop thread only
  LoopSignal deliver_;
};

void LoopSignal::Notify() {
  if (state_->pending.exchange(true, std::memory_order_acq_rel)) return;  // already on its way
  if (WakeBatcher* batcher = WakeBatcher::Collecting(io_)) {
    batcher->Add(state_);
    return;
  }
  boost::asio::post(io_, Handler{state_});
}

}  // namespace seedance::util
