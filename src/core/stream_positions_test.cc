// StreamPositions: a file's position is committed with the batch, the last one noted wins,
// a truncation's newer stream wins over lines of the older one committed late, and a closed
// file's record is deleted.
#include "core/stream_positions.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

namespace seedance {
namespace {

namespace fs = std::filesystem;

class StreamPositionsTest : public ::testing::Test {
 protected:
  StreamPositionsTest() {
    dir_ = (fs::temp_directory_path() / ("stream_positions_test_" + std::to_string(::getpid())))
               .string();
    fs::remove_all(dir_);
    Restart();
  }
  ~StreamPositionsTest() override {
    log_.reset();
    fs::remove_all(dir_);
  }
  void Restart() {
    log_.reset();
    positions_ = std::make_unique<StreamPositions>([this] { return now_; });
    auto log = storage::CheckpointLog::Open(dir_, storage::CheckpointLog::Fsync::kNever,
                                            std::chrono::seconds(1));
    ASSERT_TRUE(log.has_value());
    log_ = std::move(log).value();
    positions_->Restore(log_->entries());
  }
  void Commit() {
    positions_->Commit(*log_);
    ASSERT_TRUE(log_->Commit().ok());
  }
  uint64_t Offset(const std::string& key) {
    PositionCheckpoint::Committed c;
    return positions_->Find("t", key, &c) ? c.offset : UINT64_MAX;
  }

  int64_t now_ = 1'000'000'000;
  std::string dir_;
  std::unique_ptr<storage::CheckpointLog> log_;
  std::unique_ptr<StreamPositions> positions_;
};

TEST_F(StreamPositionsTest, TheLastPositionOfABatchIsCommittedAndRestored) {
  const uint32_t s = positions_->OpenStream("t", "1:2");
  positions_->SetHead(s, 0xabc, 40);
  positions_->Note(s, 10);
  positions_->Note(s, 25);
  Commit();
  Restart();
  PositionCheckpoint::Committed c;
  ASSERT_TRUE(positions_->Find("t", "1:2", &c));
  EXPECT_EQ(c.offset, 25u);
  EXPECT_EQ(c.head_crc, 0xabcu);
  EXPECT_EQ(c.head_bytes, 40u);
  EXPECT_FALSE(positions_->Find("other", "1:2", &c));
}

TEST_F(StreamPositionsTest, AfterATruncationTheOlderStreamsLinesDoNotMoveItBack) {
  const uint32_t before = positions_->OpenStream("t", "1:2");
  positions_->Note(before, 5000);
  Commit();
  const uint32_t after = positions_->OpenStream("t", "1:2");  // truncated: new content
  positions_->Note(after, 30);
  positions_->Note(before, 6000);  // a line read before the truncation, committed late
  Commit();
  EXPECT_EQ(Offset("1:2"), 30u);
  positions_->Note(before, 7000);
  Commit();
  Restart();
  EXPECT_EQ(Offset("1:2"), 30u);
}

TEST_F(StreamPositionsTest, AClosedFilesRecordIsDeleted) {
  const uint32_t s = positions_->OpenStream("t", "1:2");
  positions_->Note(s, 10);
  Commit();
  positions_->CloseStream(s);
  Commit();
  Restart();
  EXPECT_EQ(Offset("1:2"), UINT64_MAX);
}

TEST_F(StreamPositionsTest, ARecordKeptForAWhileExpiresAfterItsLastCommit) {
  const uint32_t s = positions_->OpenStream("t", "idem:k", std::chrono::seconds(10));
  positions_->Note(s, 3);
  Commit();
  positions_->ReleaseStream(s);
  now_ += 9'000'000'000;
  Commit();
  Restart();
  EXPECT_EQ(Offset("idem:k"), 3u);
  now_ += 2'000'000'000;
  EXPECT_EQ(Offset("idem:k"), UINT64_MAX) << "past its expiry it is not found";
  Commit();
  EXPECT_EQ(positions_->records(), 0u);
  Restart();
  EXPECT_EQ(positions_->records(), 0u);
}

}  // namespace
}  // namespace seedance
