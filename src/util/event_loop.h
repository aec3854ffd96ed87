// EventLoop: the one network thread (Boost.Asio io_context) that runs sources, sinks and the
// metrics listener. Everything posted to it runs on that thread, in order.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp uses std::exchange without including it.

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <future>
#include <thread>
#include <type_traits>

#include "util/thread_name.h"

namespace seedance {

class EventLoop {
 public:
  EventLoop() : work_(boost::asio::make_work_guard(io_)) {}
  ~EventLoop() { Join(); }
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  boost::asio::io_context& io() { return io_; }

  // Starts the thread. REQUIRES: not started.
  void Start() {
    thread_ = std::thread([this] {
      util::NameThisThread("sd-io");
      util::ScheduleThisThreadAsBatch();
      io_.run();
    });
  }
  // Runs `fn` on the loop thread.
  template <typename Fn>
  void Post(Fn&& fn) {
    boost::asio::post(io_, std::forward<Fn>(fn));
  }
  // Runs `fn` on the loop thread, waits for it and returns what it returned (on the loop
  // thread itself, runs it at once). REQUIRES: the loop runs.
  template <typename Fn>
  std::invoke_result_t<Fn&> Call(Fn&& fn) {
    using R = std::invoke_result_t<Fn&>;
    if (InLoopThread()) return fn();
    std::promise<R> done;
    Post([&] {
      if constexpr (std::is_void_v<R>) {
        fn();
        done.set_value();
      } else {
        done.set_value(fn());
      }
    });
    return done.get_future().get();
  }
  bool InLoopThread() const { return std::this_thread::get_id() == thread_.get_id(); }
  // Lets run() return once no work is left, then stops and joins.
  void Join() {
    work_.reset();
    io_.stop();
    if (thread_.joinable() && !InLoopThread()) thread_.join();
  }

 private:
  // One thread runs it: handlers it posts to itself skip the scheduler's lock (other threads
  // still post safely).
  boost::asio::io_context io_{1};
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  std::thread thread_;
};

}  // namespace seedance
