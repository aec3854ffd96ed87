#include "core/delivery/job_table.h"

#include <algorithm>

namespace seedance::delivery {

Part* JobTable::Open(std::shared_ptr<Batch> batch, const Lease& lease, uint64_t budget_step) {
  std::unique_ptr<Job> owned;
  if (free_jobs_.empty()) {
    owned = std::make_unique<Job>();
  } else {
    owned = std::move(free_jobs_.back());
    free_jobs_.pop_back();
  }
  Job* job = owned.get();
  job->id = next_job_id_++;
  job->batch = std::move(batch);
  job->started = std::chrono::steady_clock::now();
  job->lease = lease;
  job->handed_step = budget_step;
  job->parts = 1;
  job->sending = 0;
  job->shut_down = false;
  job->rejected.clear();
  jobs_.push_back(std::move(owned));
  return TakePart(job, 0, job->batch->events.size());
}

void JobTable::Close(Job* job) {
  job->batch.reset();
  job->rejected.clear();
  auto it = std::find_if(jobs_.begin(), jobs_.end(),
                         [job](const std::unique_ptr<Job>& j) { return j.get() == job; });
  free_jobs_.push_back(std::move(*it));
  *it = std::move(jobs_.back());
  jobs_.pop_back();
}

Job* JobTable::Find(uint64_t id) const {
  for (const auto& j : jobs_) {
    if (j->id == id) return j.get();
  }
  return nullptr;
}

Part* JobTable::TakePart(Job* job, size_t begin, size_t end) {
  Part* p;
  if (free_parts_.empty()) {
    p = parts_.emplace_back(std::make_unique<Part>(io_, runner_)).get();
  } else {
    p = free_parts_.back();
    free_parts_.pop_back();
  }
  p->job = job;
  p->begin = begin;
  p->end = end;
  p->slice.reset();
  p->retries = first_retries_;
  p->sending = false;
  ++p->generation;
  return p;
}

void JobTable::FreePart(Part* p) {
  ++p->generation;  // a queued timer handler finds it moved on
  p->timer.cancel();
  p->slice.reset();
  p->job = nullptr;
  free_parts_.push_back(p);
}

std::array<Part*, 2> JobTable::Split(Part* p) {
  Job* job = p->job;
  const Batch& events = p->events();
  const size_t half = p->size() / 2;
  std::array<Part*, 2> halves = {TakePart(job, p->begin, p->begin + half),
                                 TakePart(job, p->begin + half, p->end)};
  for (Part* h : halves) {
    h->slice = std::make_shared<Batch>();
    const auto from = static_cast<std::ptrdiff_t>(h->begin - p->begin);
    const auto to = static_cast<std::ptrdiff_t>(h->end - p->begin);
    h->slice->events.assign(events.events.begin() + from, events.events.begin() + to);
  }
  job->parts += 2;
  EndPart(p);  // the job stays: its halves are outstanding
  return halves;
}

void JobTable::NoteRejected(Part* p, std::vector<RejectedEvent>&& rejected) {
  for (RejectedEvent& r : rejected) {
    if (r.index < p->size()) {
      p->job->rejected.push_back(RejectedEvent{p->begin + r.index, std::move(r.reason)});
    }
  }
}

void JobTable::RejectAll(Part* p, const std::string& reason) {
  for (size_t i = p->begin; i < p->end; ++i) p->job->rejected.push_back(RejectedEvent{i, reason});
}

bool JobTable::EndPart(Part* p) {
  Job* job = p->job;
  FreePart(p);
  return --job->parts == 0;
}

void JobTable::DropParts(Job* job) {
  for (const auto& p : parts_) {
    if (p->job == job) FreePart(p.get());
  }
  job->parts = 0;
}

std::vector<Part*> JobTable::WaitingParts() const {
  std::vector<Part*> waiting;
  for (const auto& p : parts_) {
    if (p->job != nullptr && !p->sending) waiting.push_back(p.get());
  }
  return waiting;
}

Refusals JobTable::RefusalsOf(const Job& job) {
  Refusals out;
  if (job.rejected.empty()) return out;
  const size_t n = job.batch->events.size();
  out.refused.assign(n, false);
  for (const RejectedEvent& r : job.rejected) {
    if (r.index >= n || out.refused[r.index]) continue;
    out.refused[r.index] = true;
    out.each.push_back(&r);
  }
  return out;
}

}  // namespace seedance::delivery
