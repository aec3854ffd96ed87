// JobTable: the batches a SinkRunner has taken ("jobs") until each has its one outcome, and
// their parts. A part is a slice of a job's events on its way: attempted, retried, bisected
// into two parts when the sink says so. A job ends when its last part does, with one outcome
// however it was split and retried: which of its events were refused, each once, with its
// reason.
//
// Jobs and parts are pooled: neither is allocated again in steady state. A part is never
// freed while the table lives (a cancelled timer's handler may still be queued: its
// `generation` tells it the part moved on).
//
// Thread-safety: Open, Close, Find and jobs() under the runner's lock (other threads count
// the open jobs); the rest on the event loop only.
#pragma once

#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/delivery/batch_source.h"
#include "core/delivery/retry_schedule.h"
#include "seedance/sink.h"
#include "util/handler_slot.h"

namespace seedance {
class SinkRunner;
}

namespace seedance::delivery {

struct Job {
  uint64_t id = 0;
  std::shared_ptr<Batch> batch;
  std::chrono::steady_clock::time_point started;
  Lease lease;                          // what the job took from its source
  uint64_t handed_step = 0;             // the memory budget's step when the job was taken
  int parts = 0;                        // parts not finished yet
  int sending = 0;                      // of those, attempts in progress
  bool shut_down = false;               // a part ended by shutdown: not delivered
  std::vector<RejectedEvent> rejected;  // indexes into batch->events
};

struct Part {
  Part(boost::asio::io_context& io, SinkRunner* r) : runner(r), timer(io) {}
  SinkRunner* const runner;      // for the attempt's callback (two words: no allocation)
  Job* job = nullptr;            // none: free
  size_t begin = 0, end = 0;     // of job->batch->events
  std::shared_ptr<Batch> slice;  // the events of a split part; nullptr: the whole job
  uint64_t attempt_id = 0;       // of the attempt in progress
  RetrySchedule::State retries;
  bool sending = false;
  bool timed_out = false;
  std::chrono::steady_clock::time_point sent, deadline;
  int in_flight_at_send = 0;
  uint64_t generation = 0;
  boost::asio::steady_timer timer;  // retry backoff
  util::SharedSlot slot = util::MakeSlot();

  size_t size() const { return end - begin; }
  const Batch& events() const { return slice ? *slice : *job->batch; }
};

// A finished job's refused events, each once: refused[i] for events[i] (empty: none), and
// each refused event's first rejection, in the order they came.
struct Refusals {
  std::vector<bool> refused;
  std::vector<const RejectedEvent*> each;
};

class JobTable {
 public:
  // `runner` is handed to every part (see Part::runner; may be null in tests); a new part
  // starts its retries at `first_retries`.
  JobTable(boost::asio::io_context& io, SinkRunner* runner, RetrySchedule::State first_retries)
      : io_(io), runner_(runner), first_retries_(first_retries) {}

  // Under the runner's lock. A job over `batch`, with its first part: all of its events.
  Part* Open(std::shared_ptr<Batch> batch, const Lease& lease, uint64_t budget_step);
  // The job's batch is let go and the job goes back to the pool.
  void Close(Job* job);
  Job* Find(uint64_t id) const;
  const std::vector<std::unique_ptr<Job>>& jobs() const { return jobs_; }

  // Event loop only, from here on.
  // The part's events as two halves (copied: each is attempted on its own); the part ends.
  std::array<Part*, 2> Split(Part* p);
  // The sink refused some events of `p`'s attempt one by one (indexes into the part).
  void NoteRejected(Part* p, std::vector<RejectedEvent>&& rejected);
  // Every event of `p` is refused with `reason`.
  void RejectAll(Part* p, const std::string& reason);
  // The part is finished; true when it was its job's last (the job then has its outcome).
  bool EndPart(Part* p);
  // The job ends without an outcome (evicted): its parts, none of them sending, are dropped.
  void DropParts(Job* job);
  // Parts waiting for a retry (not sending).
  std::vector<Part*> WaitingParts() const;
  // The job's one outcome (after its last part ended).
  static Refusals RefusalsOf(const Job& job);

 private:
  Part* TakePart(Job* job, size_t begin, size_t end);
  void FreePart(Part* p);

  boost::asio::io_context& io_;
  SinkRunner* const runner_;
  const RetrySchedule::State first_retries_;
  uint64_t next_job_id_ = 1;
  std::vector<std::unique_ptr<Job>> jobs_;  // open (a handful: searched)
  std::vector<std::unique_ptr<Job>> free_jobs_;
  std::vector<std::unique_ptr<Part>> parts_;  // every part ever made
  std::vector<Part*> free_parts_;
};

}  // namespace seedance::delivery
