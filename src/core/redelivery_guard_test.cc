// RedeliveryGuard: the rule of redelivery_guard.h, on a real checkpoint log; each "restart"
// reopens the log and restores a fresh guard from it.
#include "core/redelivery_guard.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "util/little_endian.h"

namespace seedance {
namespace {

namespace fs = std::filesystem;
using Verdict = RedeliveryFilter::Verdict;

class RedeliveryGuardTest : public ::testing::Test {
 protected:
  RedeliveryGuardTest() {
    dir_ = (fs::temp_directory_path() / ("redelivery_guard_test_" + std::to_string(::getpid())))
               .string();
    fs::remove_all(dir_);
    Restart();
  }
  ~RedeliveryGuardTest() override {
    log_.reset();
    fs::remove_all(dir_);
  }
  // A kill -9 and a new process: what was committed is all that is left.
  void Restart() {
    log_.reset();
    guard_ = std::make_unique<RedeliveryGuard>();
    auto log = storage::CheckpointLog::Open(dir_, storage::CheckpointLog::Fsync::kNever,
                                            std::chrono::seconds(1));
    ASSERT_TRUE(log.has_value()) << log.error().ToString();
    log_ = std::move(log).value();
    guard_->Restore(log_->entries());
  }
  Verdict Admit(uint16_t id, bool dup, uint64_t fp = 7) {
    return guard_->Admit("m", id, dup, fp, [this] { ++deferred_acks_; });
  }
  // The processing loop: a batch of these ids is committed.
  void Commit(std::vector<uint16_t> ids) {
    guard_->Commit({{"m", ids}}, *log_);
    ASSERT_TRUE(log_->Commit().ok());
  }
  size_t Records() {
    auto it = log_->entries().find(RedeliveryGuard::kComponent);
    return it == log_->entries().end() ? 0 : it->second.size();
  }

  std::string dir_;
  std::unique_ptr<storage::CheckpointLog> log_;
  std::unique_ptr<RedeliveryGuard> guard_;
  int deferred_acks_ = 0;
};

TEST_F(RedeliveryGuardTest, ACommittedMessageSentAgainAfterARestartIsRecognised) {
  ASSERT_EQ(Admit(5, false), Verdict::kNew);
  Commit({5});
  Restart();  // killed before the PUBACK left
  EXPECT_EQ(Admit(5, true), Verdict::kCommitted);
  EXPECT_EQ(guard_->suppressed(), 1u);
}

// The guard used to forget an id at its first redelivery: a second one (a second kill before
// the new PUBACK left, or a reconnect) was processed again.
TEST_F(RedeliveryGuardTest, ItStaysRecognisedThroughSecondAndThirdRedeliveries) {
  Admit(5, false);
  Commit({5});
  Restart();
  EXPECT_EQ(Admit(5, true), Verdict::kCommitted);
  EXPECT_EQ(Admit(5, true), Verdict::kCommitted) << "a reconnect in the same run";
  Restart();
  EXPECT_EQ(Admit(5, true), Verdict::kCommitted) << "a second kill";
  Restart();
  EXPECT_EQ(Admit(5, true), Verdict::kCommitted) << "a third kill";
}

// The guard used to know only the ids restored at start: a message committed in this run and
// sent again after a reconnect of this run was processed twice.
TEST_F(RedeliveryGuardTest, ACommittedMessageSentAgainAfterAReconnectInTheSameRunIsRecognised) {
  Admit(9, false);
  Commit({9});
  EXPECT_EQ(Admit(9, true), Verdict::kCommitted);
}

TEST_F(RedeliveryGuardTest, ACopyOfAMessageStillInThePipelineIsAcknowledgedOnceItIsCommitted) {
  ASSERT_EQ(Admit(3, false), Verdict::kNew);  // came on a connection that dropped
  EXPECT_EQ(Admit(3, true), Verdict::kInPipeline);
  EXPECT_TRUE(guard_->TakeReadyAcks().empty()) << "not before the first copy is committed";
  Commit({3});
  auto acks = guard_->TakeReadyAcks();
  ASSERT_EQ(acks.size(), 1u);
  acks[0]();
  EXPECT_EQ(deferred_acks_, 1);
  EXPECT_EQ(Admit(3, true), Verdict::kCommitted);
}

TEST_F(RedeliveryGuardTest, AnIdUsedForANewMessageIsProcessedAndReleasesTheOldEntry) {
  Admit(4, false);
  Commit({4});
  // Without DUP: the broker had our PUBACK and used the id again.
  EXPECT_EQ(Admit(4, false, 8), Verdict::kNew);
  EXPECT_EQ(guard_->unconfirmed(), 0u);
  Commit({4});
  Restart();
  EXPECT_EQ(Admit(4, true, 8), Verdict::kCommitted) << "the new message is the one kept";
  EXPECT_EQ(Admit(4, true, 7), Verdict::kNew) << "the old one is gone";
}

TEST_F(RedeliveryGuardTest, ADupWithAnotherFingerprintIsANewMessage) {
  Admit(6, false, 100);
  Commit({6});
  // Our PUBACK reached the broker, which used id 6 for another message whose first
  // transmission died with the connection: it comes with DUP.
  EXPECT_EQ(Admit(6, true, 200), Verdict::kNew);
  Commit({6});
  EXPECT_EQ(Admit(6, true, 200), Verdict::kCommitted);
}

TEST_F(RedeliveryGuardTest, AConfirmedAcknowledgementReleasesTheIdAndItsRecord) {
  Admit(1, false);
  Admit(2, false);
  Commit({1, 2});
  EXPECT_EQ(Records(), 1u);
  guard_->Confirmed("m", {1});
  Commit({});
  EXPECT_EQ(Records(), 1u) << "id 2 is not confirmed yet";
  guard_->Confirmed("m", {2});
  Commit({});
  EXPECT_EQ(Records(), 0u);
  EXPECT_EQ(guard_->unconfirmed(), 0u);
  Restart();
  EXPECT_EQ(guard_->unconfirmed(), 0u);
  EXPECT_EQ(Admit(1, true), Verdict::kNew);
}

TEST_F(RedeliveryGuardTest, AWithdrawnMessageIsNewWhenOfferedAgain) {
  ASSERT_EQ(Admit(8, false), Verdict::kNew);
  guard_->Withdraw("m", 8);  // the pipeline was full
  EXPECT_EQ(Admit(8, false), Verdict::kNew);
  EXPECT_EQ(guard_->suppressed(), 0u);
}

TEST_F(RedeliveryGuardTest, SourcesAreApart) {
  Admit(5, false);
  Commit({5});
  EXPECT_EQ(guard_->Admit("other", 5, true, 7, [] {}), Verdict::kNew);
}

TEST_F(RedeliveryGuardTest, RecordsWrittenBeforeFingerprintsMatchAnyCopy) {
  std::string value;
  util::PutFixed64(value, 123);  // commit time, as the old records had
  util::PutFixed16(value, 11);
  util::PutFixed16(value, 12);
  log_->Put(RedeliveryGuard::kLegacyComponent, "m\n4", value);
  ASSERT_TRUE(log_->Commit().ok());
  Restart();
  EXPECT_EQ(Admit(11, true, 99), Verdict::kCommitted);
  EXPECT_EQ(Admit(12, true, 98), Verdict::kCommitted);
  guard_->Confirmed("m", {11, 12});
  Admit(13, false);
  Commit({13});
  Restart();
  auto legacy = log_->entries().find(RedeliveryGuard::kLegacyComponent);
  EXPECT_TRUE(legacy == log_->entries().end() || legacy->second.empty());
  EXPECT_EQ(Admit(11, true, 99), Verdict::kNew);
}

TEST_F(RedeliveryGuardTest, UnconfirmedIdsAreBoundedByThePacketIdSpace) {
  // A broker that never confirms (and mosquitto's ids, which count up and wrap): at most one
  // entry per id, older batches deleted once every id of theirs was used again.
  std::vector<uint16_t> batch;
  for (uint32_t n = 0; n < 3 * 65535; ++n) {
    const auto id = static_cast<uint16_t>(n % 65535 + 1);
    Admit(id, false);
    batch.push_back(id);
    if (batch.size() == 1000) {
      Commit(batch);
      batch.clear();
    }
  }
  EXPECT_LE(guard_->unconfirmed(), 65535u);
  EXPECT_LE(Records(), 67u);
  EXPECT_LE(guard_->batch_records(), 67u);
}

}  // namespace
}  // namespace seedance
