#include "sinks/common/message_acks.h"

#include <algorithm>

#include "util/event_loop.h"

namespace seedance::sinks {

MessageAcks::Handle MessageAcks::Begin(uint64_t id, AttemptCallback done) {
  auto a = std::make_shared<Attempt>();
  a->id = id;
  a->done = std::move(done);
  active_.push_back(a);
  return a;
}

void MessageAcks::Sent(const Handle& a) {
  std::lock_guard<std::mutex> lock(mu_);
  ++a->outstanding;
}

void MessageAcks::RefuseUnsent(const Handle& a, size_t index, std::string reason) {
  std::lock_guard<std::mutex> lock(mu_);
  a->rejected.push_back({index, std::move(reason)});
}

void MessageAcks::Launched(const Handle& a) {
  bool complete = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    complete = --a->outstanding == 0 && !a->finished;
    if (complete) a->finished = true;
  }
  if (complete) Complete(a);
}

void MessageAcks::Answer(const Handle& a, std::string* failure, size_t refused_index,
                         std::string* refusal) {
  bool complete = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (failure != nullptr && a->transient.empty()) a->transient = std::move(*failure);
    if (refusal != nullptr) a->rejected.push_back({refused_index, std::move(*refusal)});
    complete = --a->outstanding == 0 && !a->finished;
    if (complete) a->finished = true;
  }
  if (complete) {
    loop_.Post([self = shared_from_this(), a] { self->Complete(a); });
  }
}

void MessageAcks::Complete(const Handle& a) {
  auto it = std::find(active_.begin(), active_.end(), a);
  if (it == active_.end()) return;  // aborted or stopped: done already ran
  active_.erase(it);
  AttemptCallback done = std::move(a->done);
  if (!a->transient.empty()) return done(AttemptOutcome::Retry(a->transient));
  AttemptOutcome outcome = AttemptOutcome::Delivered();
  {
    std::lock_guard<std::mutex> lock(mu_);
    outcome.rejected = std::move(a->rejected);
  }
  done(std::move(outcome));
}

bool MessageAcks::Abort(uint64_t id, const std::string& reason) {
  auto it =
      std::find_if(active_.begin(), active_.end(), [id](const Handle& a) { return a->id == id; });
  if (it == active_.end()) return false;
  Handle a = *it;
  active_.erase(it);
  {
    std::lock_guard<std::mutex> lock(mu_);
    a->finished = true;
  }
  AttemptCallback done = std::move(a->done);
  done(AttemptOutcome::Retry(reason));
  return true;
}

void MessageAcks::StopAll() {
  std::vector<Handle> left;
  left.swap(active_);
  for (Handle& a : left) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      a->finished = true;
    }
    AttemptCallback done = std::move(a->done);
    done(AttemptOutcome::Shutdown());
  }
}

}  // namespace seedance::sinks
