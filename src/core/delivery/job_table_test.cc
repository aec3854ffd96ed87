#include "core/delivery/job_table.h"

#include <gtest/gtest.h>

namespace seedance::delivery {
namespace {

std::shared_ptr<Batch> BatchOf(int n) {
  auto b = std::make_shared<Batch>();
  for (int i = 0; i < n; ++i) {
    Event e;
    e.payload = std::to_string(i);
    b->events.push_back(std::move(e));
  }
  return b;
}

std::vector<std::string> Payloads(const Batch& b) {
  std::vector<std::string> out;
  for (const Event& e : b.events) out.push_back(e.payload);
  return out;
}

class JobTableTest : public ::testing::Test {
 protected:
  boost::asio::io_context io_;
  JobTable table_{io_, nullptr, RetrySchedule::State{0, std::chrono::milliseconds(7)}};
};

TEST_F(JobTableTest, AJobStartsAsOnePartOverAllItsEventsAndEndsWithIt) {
  Part* p = table_.Open(BatchOf(5), Lease{.first = 10, .last = 14, .bytes = 99}, 3);
  Job* job = p->job;
  ASSERT_NE(job, nullptr);
  EXPECT_EQ(p->size(), 5u);
  EXPECT_EQ(&p->events(), job->batch.get());
  EXPECT_EQ(p->retries.backoff, std::chrono::milliseconds(7));
  EXPECT_EQ(job->lease.first, 10u);
  EXPECT_EQ(job->lease.bytes, 99u);
  EXPECT_EQ(job->handed_step, 3u);
  EXPECT_EQ(table_.Find(job->id), job);
  EXPECT_TRUE(table_.EndPart(p));  // its only part: the job has its outcome
  EXPECT_EQ(p->job, nullptr);
  table_.Close(job);
  EXPECT_TRUE(table_.jobs().empty());
}

TEST_F(JobTableTest, SplitHalvesCopyTheirEventsAndTheJobEndsWithItsLastPart) {
  Part* whole = table_.Open(BatchOf(5), Lease{}, 0);
  Job* job = whole->job;
  auto [a, b] = table_.Split(whole);
  EXPECT_EQ(Payloads(a->events()), (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(Payloads(b->events()), (std::vector<std::string>{"2", "3", "4"}));
  EXPECT_NE(&a->events(), job->batch.get());  // its own copy: attempted on its own
  auto [b1, b2] = table_.Split(b);
  EXPECT_EQ(b1->begin, 2u);
  EXPECT_EQ(Payloads(b2->events()), (std::vector<std::string>{"3", "4"}));
  EXPECT_FALSE(table_.EndPart(a));
  EXPECT_FALSE(table_.EndPart(b2));
  EXPECT_TRUE(table_.EndPart(b1));
}

TEST_F(JobTableTest, TheOutcomeCountsEachRefusedEventOnceWithItsFirstReason) {
  Part* whole = table_.Open(BatchOf(6), Lease{}, 0);
  Job* job = whole->job;
  auto [a, b] = table_.Split(whole);  // 0-2, 3-5
  // The sink refuses the part's second event (index 1 of 3-5: event 4), twice, and an index
  // beyond the part, which is ignored.
  table_.NoteRejected(
      b, {RejectedEvent{1, "bad field"}, RejectedEvent{1, "again"}, RejectedEvent{7, "beyond"}});
  table_.RejectAll(a, "too large");
  table_.EndPart(a);
  ASSERT_TRUE(table_.EndPart(b));
  const Refusals r = JobTable::RefusalsOf(*job);
  ASSERT_EQ(r.each.size(), 4u);
  EXPECT_EQ(r.refused, (std::vector<bool>{true, true, true, false, true, false}));
  EXPECT_EQ(r.each[0]->index, 4u);
  EXPECT_EQ(r.each[0]->reason, "bad field");
  EXPECT_EQ(r.each[1]->reason, "too large");
}

TEST_F(JobTableTest, NoRefusalsIsAnEmptyOutcome) {
  Part* p = table_.Open(BatchOf(3), Lease{}, 0);
  ASSERT_TRUE(table_.EndPart(p));
  const Refusals r = JobTable::RefusalsOf(*table_.jobs().front());
  EXPECT_TRUE(r.refused.empty());
  EXPECT_TRUE(r.each.empty());
}

TEST_F(JobTableTest, DroppedPartsAreFreeAndTheirQueuedTimersFindThemMovedOn) {
  Part* whole = table_.Open(BatchOf(4), Lease{}, 0);
  Job* job = whole->job;
  auto [a, b] = table_.Split(whole);
  b->sending = true;  // only `a` waits for a retry
  EXPECT_EQ(table_.WaitingParts(), std::vector<Part*>{a});
  const uint64_t generation = a->generation;
  b->sending = false;
  table_.DropParts(job);
  EXPECT_EQ(a->job, nullptr);
  EXPECT_EQ(b->job, nullptr);
  EXPECT_NE(a->generation, generation);
  EXPECT_TRUE(table_.WaitingParts().empty());
  table_.Close(job);
}

TEST_F(JobTableTest, JobsAndPartsAreReusedWithNewIds) {
  Part* p1 = table_.Open(BatchOf(2), Lease{}, 0);
  Job* j1 = p1->job;
  const uint64_t id1 = j1->id;
  table_.NoteRejected(p1, {RejectedEvent{0, "x"}});
  table_.EndPart(p1);
  table_.Close(j1);
  Part* p2 = table_.Open(BatchOf(3), Lease{}, 0);
  EXPECT_EQ(p2, p1);
  EXPECT_EQ(p2->job, j1);
  EXPECT_GT(j1->id, id1);
  EXPECT_TRUE(j1->rejected.empty());  // nothing of the last job's outcome stays
  EXPECT_EQ(p2->size(), 3u);
}

}  // namespace
}  // namespace seedance::delivery
