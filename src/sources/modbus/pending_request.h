// PendingRequest: the one request a transport has out, and its completion. Each request gets
// a new id; the handlers of an earlier one (a timer that fired late, a read aborted by a close)
// carry its id and are recognised as stale. The completion runs once, on a later turn of the
// loop (a caller that sends its next request from it does not nest inside this one's handler),
// and never after Shutdown(). Not thread-safe (the event loop's).
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/post.hpp>
#include <memory>
#include <string>
#include <utility>

#include "sources/modbus/transport.h"

namespace seedance::sources::modbus_source {

class PendingRequest {
 public:
  explicit PendingRequest(boost::asio::any_io_executor executor) : executor_(std::move(executor)) {}

  // A new request completing with `done`; its id.
  uint64_t Begin(Transport::Done done) {
    done_ = std::move(done);
    return ++generation_;
  }
  // Whether `id` is the request still out.
  bool Current(uint64_t id) const { return id == generation_ && done_ != nullptr; }
  // Completes request `id` with `outcome` (nothing when it is not Current). `keep_alive` holds
  // the transport until the completion has run.
  void Complete(uint64_t id, Outcome outcome, std::shared_ptr<const void> keep_alive) {
    if (!Current(id)) return;
    ++generation_;  // late handlers of this request are ignored
    Transport::Done done = std::move(done_);
    done_ = nullptr;
    boost::asio::post(executor_, [this, keep_alive = std::move(keep_alive), done = std::move(done),
                                  outcome = std::move(outcome)]() mutable {
      if (!shut_) done(std::move(outcome));
    });
  }
  static Outcome Failed(Failure failure, std::string detail) {
    Outcome o;
    o.failure = failure;
    o.detail = std::move(detail);
    return o;
  }
  static Outcome Answered(modbus::ReadAnswer answer) {
    Outcome o;
    o.ok = true;
    o.answer = std::move(answer);
    return o;
  }
  void Shutdown() {
    shut_ = true;
    done_ = nullptr;
  }

 private:
  boost::asio::any_io_executor executor_;
  uint64_t generation_ = 0;
  Transport::Done done_;
  bool shut_ = false;
};

}  // namespace seedance::sources::modbus_source
