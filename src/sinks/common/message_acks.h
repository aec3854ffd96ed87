// Attempts whose messages are acknowledged one by one, on a client library's own thread (NATS
// PubAcks, Kafka delivery reports): MessageAcks counts each attempt's outstanding messages,
// collects what failed (for a retry) and what was refused (for `rejected`), and completes
// the attempt on the event loop once its last message is answered, or at once when the runner
// aborts it or the sink stops (late answers are then ignored).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "seedance/sink.h"

namespace seedance {
class EventLoop;
}

namespace seedance::sinks {

class MessageAcks : public std::enable_shared_from_this<MessageAcks> {
 public:
  struct Attempt {
    uint64_t id = 0;
    AttemptCallback done;
    size_t outstanding = 1;  // messages awaiting an answer, plus 1 until Launched()
    std::string transient;   // the first failure worth a retry; empty if none
    std::vector<RejectedEvent> rejected;
    bool finished = false;  // `done` has run or is posted
  };
  using Handle = std::shared_ptr<Attempt>;

  explicit MessageAcks(EventLoop& loop) : loop_(loop) {}

  // Loop: a new attempt. Then Sent() before each message goes to the library, Launched() after
  // the last.
  Handle Begin(uint64_t id, AttemptCallback done);
  void Sent(const Handle& a);
  void Launched(const Handle& a);
  // Any thread: a message's answer, or (before or instead of handing it over) its fate.
  void Acked(const Handle& a) { Answer(a, nullptr, SIZE_MAX, nullptr); }
  void Failed(const Handle& a, std::string reason) { Answer(a, &reason, SIZE_MAX, nullptr); }
  void Refused(const Handle& a, size_t index, std::string reason) {
    Answer(a, nullptr, index, &reason);
  }
  // Loop: an event refused before any message was made for it (no Sent()).
  void RefuseUnsent(const Handle& a, size_t index, std::string reason);
  // Loop: ends attempt `id` now with a retry (the runner's timeout); false if not found.
  bool Abort(uint64_t id, const std::string& reason);
  // Loop: ends every attempt with kShutdown.
  void StopAll();

 private:
  void Answer(const Handle& a, std::string* failure, size_t refused_index, std::string* refusal);
  void Complete(const Handle& a);  // loop

  EventLoop& loop_;
  std::mutex mu_;               // the Attempts' counts and lists (library threads, the loop)
  std::vector<Handle> active_;  // loop only
};

}  // namespace seedance::sinks
