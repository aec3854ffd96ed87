#include "storage/queue_log.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "storage/log_format.h"
#include "storage/queue_reader.h"

namespace seedance::storage {
namespace {

namespace fs = std::filesystem;

class QueueLogTest : public ::testing::Test {
 protected:
  QueueLogTest() {
    dir_ = (fs::temp_directory_path() /
            ("queue_log_test_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    fs::remove_all(dir_);
  }
  ~QueueLogTest() override { fs::remove_all(dir_); }

  std::unique_ptr<QueueLog> Open(uint64_t segment_bytes = 1 << 20,
                                 RecoveryReport* report = nullptr) {
    auto log = QueueLog::Open(LogOptions{dir_, segment_bytes}, report);
    EXPECT_TRUE(log.has_value()) << (log ? "" : log.error().ToString());
    return log ? std::move(log).value() : nullptr;
  }
  static std::string Payload(int i) {
    return "event-" + std::to_string(i) + std::string(i % 50, 'x');
  }
  std::vector<std::pair<uint64_t, std::string>> ReadAll(const QueueLog& log, uint64_t from = 1,
                                                        QueueReader** keep = nullptr) {
    std::vector<std::pair<uint64_t, std::string>> out;
    QueueReader reader(log, from);
    uint64_t seq;
    uint8_t tag;
    std::string_view p;
    while (reader.Next(&seq, &tag, &p)) out.emplace_back(seq, std::string(p));
    skipped_ = 0;
    for (const auto& gap : reader.TakeGaps()) skipped_ += gap.records();
    (void)keep;
    return out;
  }
  std::string dir_;
  uint64_t skipped_ = 0;
};

TEST_F(QueueLogTest, AppendsAndReadsBackInOrderAcrossSegments) {
  auto log = Open(4096);
  for (int i = 0; i < 500; ++i)
    ASSERT_EQ(*log->Append(0, Payload(i)), static_cast<uint64_t>(i + 1));
  ASSERT_TRUE(log->Flush().ok());
  EXPECT_GT(log->Segments().size(), 5u);
  auto all = ReadAll(*log);
  ASSERT_EQ(all.size(), 500u);
  for (int i = 0; i < 500; ++i) {
    EXPECT_EQ(all[i].first, static_cast<uint64_t>(i + 1));
    EXPECT_EQ(all[i].second, Payload(i));
  }
  auto tail = ReadAll(*log, 401);
  ASSERT_EQ(tail.size(), 100u);
  EXPECT_EQ(tail.front().first, 401u);
}

TEST_F(QueueLogTest, AnEncodedRecordOverTheLimitIsRefusedAndLeavesTheBufferAsItWas) {
  auto log = Open();
  ASSERT_EQ(*log->Append(0, "before"), 1u);
  auto too_large =
      log->AppendEncoded(0, [](std::string& out) { out.append(kMaxPayload + 1, 'x'); });
  ASSERT_FALSE(too_large.has_value());
  EXPECT_EQ(too_large.error().code(), StatusCode::kInvalidArgument);
  ASSERT_EQ(*log->AppendEncoded(0, [](std::string& out) { out.append("after"); }), 2u);
  ASSERT_TRUE(log->Flush().ok());
  auto all = ReadAll(*log);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].second, "before");
  EXPECT_EQ(all[1].second, "after");
  EXPECT_EQ(skipped_, 0u);
}

TEST_F(QueueLogTest, UnflushedRecordsAreInvisibleToReaders) {
  auto log = Open();
  ASSERT_TRUE(log->Append(0, "a").has_value());
  EXPECT_TRUE(ReadAll(*log).empty());
  ASSERT_TRUE(log->Flush().ok());
  EXPECT_EQ(ReadAll(*log).size(), 1u);
}

TEST_F(QueueLogTest, ReaderFollowsTheWriter) {
  auto log = Open(2048);
  QueueReader reader(*log, 1);
  uint64_t seq;
  uint8_t tag;
  std::string_view p;
  EXPECT_FALSE(reader.Next(&seq, &tag, &p));
  for (int round = 0; round < 20; ++round) {
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(log->Append(7, Payload(round * 10 + i)).has_value());
    ASSERT_TRUE(log->Flush().ok());
    for (int i = 0; i < 10; ++i) {
      ASSERT_TRUE(reader.Next(&seq, &tag, &p)) << round << "/" << i;
      EXPECT_EQ(seq, static_cast<uint64_t>(round * 10 + i + 1));
      EXPECT_EQ(tag, 7);
      EXPECT_EQ(p, Payload(round * 10 + i));
    }
    EXPECT_FALSE(reader.Next(&seq, &tag, &p));
  }
}

TEST_F(QueueLogTest, ReopenContinuesTheSequence) {
  {
    auto log = Open();
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(log->Append(0, Payload(i)).has_value());
  }  // destructor flushes
  RecoveryReport report;
  auto log = Open(1 << 20, &report);
  EXPECT_EQ(report.records, 10u);
  EXPECT_EQ(log->next_sequence(), 11u);
  EXPECT_EQ(*log->Append(0, "more"), 11u);
}

TEST_F(QueueLogTest, TornLastRecordIsTruncatedNotCorruption) {
  {
    auto log = Open();
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(log->Append(0, Payload(i)).has_value());
  }
  std::string path = dir_ + "/" + SegmentFileName(1);
  auto size = fs::file_size(path);
  fs::resize_file(path, size - 5);  // a write cut short by a crash
  RecoveryReport report;
  auto log = Open(1 << 20, &report);
  EXPECT_EQ(report.records, 9u);
  EXPECT_GT(report.truncated_bytes, 0u);
  // The torn record is reported, and its sequence is not numbered again (a sink may have
  // delivered it before a power cut): the next one starts a new segment.
  ASSERT_EQ(report.gaps.size(), 1u);
  EXPECT_EQ(report.gaps[0].first, 10u);
  EXPECT_EQ(report.gaps[0].last, 10u);
  EXPECT_EQ(report.gaps[0].reason, LossReason::kTornTail);
  EXPECT_EQ(log->next_sequence(), 11u);
  auto all = ReadAll(*log);
  ASSERT_EQ(all.size(), 9u);
  EXPECT_EQ(all.back().second, Payload(8));
  EXPECT_EQ(skipped_, 0u);
}

TEST_F(QueueLogTest, FlippedBytesInAClosedSegmentSkipExactlyTheDamagedRecords) {
  {
    auto log = Open(2048);
    for (int i = 0; i < 100; ++i) ASSERT_TRUE(log->Append(0, Payload(i)).has_value());
  }
  // Damage the payload of one record and the header of another in the first segment.
  std::string path = dir_ + "/" + SegmentFileName(1);
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  std::string data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  size_t rec2 = data.find("event-2");                // payload of record 3
  size_t rec5 = data.find("event-5") - kHeaderSize;  // header of record 6
  f.seekp(static_cast<std::streamoff>(rec2));
  f.put('E');
  f.seekp(static_cast<std::streamoff>(rec5 + 2));
  f.put('\x7f');
  f.close();
  RecoveryReport report;
  auto log = Open(2048, &report);
  EXPECT_EQ(report.damaged_regions, 2u);
  EXPECT_EQ(report.truncated_bytes, 0u);
  ASSERT_EQ(report.gaps.size(), 2u);  // records, not regions: exactly 3 and 6
  EXPECT_EQ(report.gaps[0].first, 3u);
  EXPECT_EQ(report.gaps[0].records(), 1u);
  EXPECT_EQ(report.gaps[1].first, 6u);
  EXPECT_EQ(report.gaps[1].records(), 1u);
  EXPECT_EQ(report.gaps[1].reason, LossReason::kCorrupt);
  auto all = ReadAll(*log);
  EXPECT_EQ(all.size(), 98u);
  EXPECT_EQ(skipped_, 2u);
  for (auto& [seq, p] : all) {
    EXPECT_NE(seq, 3u);
    EXPECT_NE(seq, 6u);
    EXPECT_EQ(p, Payload(static_cast<int>(seq - 1)));
  }
}

TEST_F(QueueLogTest, DeleteBeforeRemovesOnlyFullyConsumedSegments) {
  auto log = Open(2048);
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(log->Append(0, Payload(i)).has_value());
  ASSERT_TRUE(log->Flush().ok());
  auto before = log->Segments();
  uint64_t bytes = log->disk_bytes();
  log->DeleteBefore(before[2].first_sequence);  // segments 0 and 1 are consumed
  auto after = log->Segments();
  EXPECT_EQ(after.size(), before.size() - 2);
  EXPECT_EQ(log->first_sequence(), before[2].first_sequence);
  EXPECT_LT(log->disk_bytes(), bytes);
  EXPECT_FALSE(fs::exists(before[0].path));
  log->DeleteBefore(1'000'000);
  EXPECT_EQ(log->Segments().size(), 1u);  // the active segment stays
}

TEST_F(QueueLogTest, ReaderSkipsToRetainedDataAfterDropOldest) {
  auto log = Open(2048);
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(log->Append(0, Payload(i)).has_value());
  ASSERT_TRUE(log->Flush().ok());
  QueueReader reader(*log, 1);
  uint64_t seq;
  uint8_t tag;
  std::string_view p;
  ASSERT_TRUE(reader.Next(&seq, &tag, &p));
  auto dropped = log->DropOldestSegment();
  ASSERT_TRUE(dropped.has_value());
  uint64_t first = log->first_sequence();
  uint64_t count = 0, last = 0;
  while (reader.Next(&seq, &tag, &p)) {
    ++count;
    last = seq;
  }
  EXPECT_EQ(last, 200u);
  EXPECT_EQ(dropped->first, 1u);
  EXPECT_EQ(dropped->second, first - 1);
  EXPECT_LE(count, 200 - first + 1);  // nothing read twice, nothing dropped read
}

TEST_F(QueueLogTest, AClosedSegmentCutShortIsDamageCountedByTheRecordsItLost) {
  {
    auto log = Open(2048);
    for (int i = 0; i < 200; ++i) ASSERT_TRUE(log->Append(0, Payload(i)).has_value());
  }
  auto before = [&] {
    auto log = Open(2048);
    return log->Segments();
  }();
  ASSERT_GE(before.size(), 3u);
  // Cut the first segment in the middle of a record: it and the ones after it in that
  // segment are lost, but nothing else, and not as a torn tail (that is the newest file's).
  fs::resize_file(before[0].path, before[0].size - 10);
  RecoveryReport report;
  auto log = Open(2048, &report);
  EXPECT_EQ(report.truncated_bytes, 0u);
  EXPECT_EQ(report.damaged_regions, 1u);
  ASSERT_EQ(report.gaps.size(), 1u);
  EXPECT_EQ(report.gaps[0].reason, LossReason::kCorrupt);
  EXPECT_EQ(report.gaps[0].last, before[1].first_sequence - 1);
  EXPECT_EQ(report.gaps[0].records(), 1u);  // the record the cut went through
}

TEST_F(QueueLogTest, SecondProcessCannotOpenTheSameDirectory) {
  auto log = Open();
  auto second = QueueLog::Open(LogOptions{dir_, 1 << 20}, nullptr);
  ASSERT_FALSE(second.has_value());
  EXPECT_EQ(second.error().code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace seedance::storage
