#include "storage/checkpoint_log.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "storage/log_format.h"
#include "storage/record_scanner.h"
#include "testing/fault_file_system.h"
#include "util/crc32c.h"
#include "util/little_endian.h"

namespace seedance::storage {
namespace {

class CheckpointLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/checkpoint_log_test_" + std::to_string(::getpid());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::unique_ptr<CheckpointLog> Open() {
    auto log = CheckpointLog::Open(dir_, CheckpointLog::Fsync::kNever, std::chrono::seconds(1));
    EXPECT_TRUE(log.has_value()) << (log ? "" : log.error().message());
    return log ? std::move(log).value() : nullptr;
  }
  std::string dir_;
};

TEST_F(CheckpointLogTest, LastWriteWinsAcrossReopenAndDeletesStick) {
  {
    auto log = Open();
    log->Put("window", "k:a", "1");
    log->Put("window", "k:b", "2");
    ASSERT_TRUE(log->Commit().ok());
    log->Put("window", "k:a", "3");
    log->Put("window", "k:b", "");  // delete
    log->Put("watermark", "stream", "w");
    ASSERT_TRUE(log->Commit().ok());
  }
  auto log = Open();
  const auto& e = log->entries();
  EXPECT_EQ(e.at("window").at("k:a"), "3");
  EXPECT_EQ(e.at("window").count("k:b"), 0u);
  EXPECT_EQ(e.at("watermark").at("stream"), "w");
  EXPECT_FALSE(log->truncated_tail());
}

TEST_F(CheckpointLogTest, TornTailIsTruncatedAndEverythingBeforeItKept) {
  {
    auto log = Open();
    log->Put("w", "k1", "v1");
    ASSERT_TRUE(log->Commit().ok());
    log->Put("w", "k2", "v2");
    ASSERT_TRUE(log->Commit().ok());
  }
  const std::string path = dir_ + "/state.log";
  const auto size = std::filesystem::file_size(path);
  std::filesystem::resize_file(path, size - 3);  // the last record loses its end
  {
    auto log = Open();
    EXPECT_TRUE(log->truncated_tail());
    EXPECT_EQ(log->entries().at("w").size(), 1u);
    EXPECT_EQ(log->entries().at("w").at("k1"), "v1");
    log->Put("w", "k3", "v3");  // appends after the cut, readable next time
    ASSERT_TRUE(log->Commit().ok());
  }
  auto log = Open();
  EXPECT_EQ(log->entries().at("w").at("k3"), "v3");
  EXPECT_FALSE(log->truncated_tail());
}

// A process killed inside a commit's write leaves a prefix of it on disk (the kernel stops a
// write at a page boundary when a fatal signal is pending). Cut at every byte of the second
// commit, the log must come back with all of that commit or none of it: a window's state
// without the redelivery ids committed with it counts the batch twice when it is redelivered.
TEST_F(CheckpointLogTest, AKillInsideACommitsWriteTakesNoneOfIt) {
  const std::string path = dir_ + "/state.log";
  uintmax_t first_commit = 0;
  {
    auto log = Open();
    log->Put("window", "k:a", "a1");
    log->Put("window", "k:b", "b1");
    log->Put("redelivery", "m\n0", "ids1");
    ASSERT_TRUE(log->Commit().ok());
    first_commit = std::filesystem::file_size(path);
    log->Put("window", "k:a", "a2");
    log->Put("window", "k:b", "");
    log->Put("redelivery", "m\n1", "ids2");
    ASSERT_TRUE(log->Commit().ok());
  }
  std::string whole;
  {
    std::ifstream in(path, std::ios::binary);
    whole.assign(std::istreambuf_iterator<char>(in), {});
  }
  ASSERT_GT(whole.size(), first_commit);
  for (size_t cut = first_commit; cut <= whole.size(); ++cut) {
    SCOPED_TRACE("file cut at byte " + std::to_string(cut) + " of " + std::to_string(whole.size()));
    {
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out.write(whole.data(), static_cast<std::streamsize>(cut));
    }
    const bool complete = cut == whole.size();
    {
      auto log = Open();
      ASSERT_NE(log, nullptr);
      const auto& e = log->entries();
      EXPECT_EQ(e.at("window").at("k:a"), complete ? "a2" : "a1");
      EXPECT_EQ(e.at("window").count("k:b"), complete ? 0u : 1u);
      EXPECT_EQ(e.at("redelivery").count("m\n1"), complete ? 1u : 0u);
      EXPECT_EQ(log->lost_records(), 0u) << "a torn commit was never acknowledged: not lost";
      EXPECT_EQ(log->truncated_tail(), cut > first_commit && !complete);
      // The next commit starts where the torn one was cut, and is not completed by it.
      log->Put("window", "k:c", "c");
      ASSERT_TRUE(log->Commit().ok());
    }
    auto log = Open();
    EXPECT_EQ(log->entries().at("window").at("k:c"), "c");
    EXPECT_EQ(log->entries().at("window").at("k:a"), complete ? "a2" : "a1");
    EXPECT_EQ(log->lost_records(), 0u);
    EXPECT_FALSE(log->truncated_tail());
    if (HasFailure()) return;
  }
}

// A commit whose write failed stays pending; changes made before the retry join it, and the
// retry writes them as one commit.
TEST_F(CheckpointLogTest, ChangesAfterAFailedCommitJoinItsRetry) {
  std::filesystem::create_directories(dir_);
  seedance::testing::FaultFileSystem faults(dir_);
  {
    auto opened =
        CheckpointLog::Open(dir_, CheckpointLog::Fsync::kNever, std::chrono::seconds(1), faults);
    ASSERT_TRUE(opened.has_value()) << opened.error().message();
    auto log = std::move(opened).value();
    log->Put("w", "a", "1");
    faults.FailNext(seedance::testing::FaultFileSystem::Op::kWrite, EIO);
    EXPECT_FALSE(log->Commit().ok());
    log->Put("w", "b", "2");
    ASSERT_TRUE(log->Commit().ok());
  }
  auto log = Open();
  EXPECT_EQ(log->entries().at("w").at("a"), "1");
  EXPECT_EQ(log->entries().at("w").at("b"), "2");
  EXPECT_EQ(log->lost_records(), 0u) << "the retry kept the sequences consecutive";
}

TEST_F(CheckpointLogTest, CompactionKeepsTheLiveEntriesOnly) {
  auto log = Open();
  const std::string big(4096, 'x');
  uint64_t appended = 0;            // what the commits added to the file, compactions aside
  for (int i = 0; i < 1000; ++i) {  // 4 MB written, one live entry
    log->Put("w", "k", big + std::to_string(i));
    const uint64_t before = log->file_bytes();
    ASSERT_TRUE(log->Commit().ok());
    if (log->file_bytes() > before) appended += log->file_bytes() - before;
  }
  EXPECT_LT(log->file_bytes(), 1u << 20);
  // Counted: every commit's bytes (over 4 MB) and the compactions' (a live entry's each).
  EXPECT_GT(log->bytes_written(), 1000u * 4096);
  EXPECT_GT(log->bytes_written(), appended) << "the compactions' writes count too";
  EXPECT_LT(log->bytes_written(), 1000u * (4096 + 200));
  log.reset();
  auto reopened = Open();
  EXPECT_EQ(reopened->entries().at("w").at("k"), big + "999");
}

TEST_F(CheckpointLogTest, ASecondWriterIsRefused) {
  auto first = Open();
  auto second = CheckpointLog::Open(dir_, CheckpointLog::Fsync::kNever, std::chrono::seconds(1));
  ASSERT_FALSE(second.has_value());
  EXPECT_NE(second.error().message().find("in use"), std::string::npos);
}

// Finding 6: one damaged byte mid-file skips that record only; later records are kept.
TEST_F(CheckpointLogTest, AFlippedByteMidFileLosesOneRecordNotTheRest) {
  {
    auto log = Open();
    for (int i = 0; i < 20; ++i) {
      log->Put("w", "k" + std::to_string(i), "value-" + std::to_string(i));
      ASSERT_TRUE(log->Commit().ok());
    }
  }
  const std::string path = dir_ + "/state.log";
  std::string data;
  {
    std::ifstream in(path, std::ios::binary);
    data.assign(std::istreambuf_iterator<char>(in), {});
  }
  const size_t at = data.find("value-7");
  ASSERT_NE(at, std::string::npos);
  data[at] ^= 0x01;
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << data;
  }
  auto log = Open();
  EXPECT_EQ(log->lost_records(), 1u);
  EXPECT_FALSE(log->truncated_tail());
  const auto& w = log->entries().at("w");
  EXPECT_EQ(w.size(), 19u);
  EXPECT_EQ(w.count("k7"), 0u);
  EXPECT_EQ(w.at("k19"), "value-19");  // everything after the damage is kept
  log->Put("w", "k20", "value-20");    // and appends go on after it
  ASSERT_TRUE(log->Commit().ok());
  log.reset();
  auto again = Open();
  EXPECT_EQ(again->entries().at("w").at("k20"), "value-20");
}

TEST_F(CheckpointLogTest, ADamagedHeaderIsSkippedByResynchronising) {
  {
    auto log = Open();
    for (int i = 0; i < 20; ++i) {
      log->Put("w", "k" + std::to_string(i), "v");
      ASSERT_TRUE(log->Commit().ok());
    }
  }
  const std::string path = dir_ + "/state.log";
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  std::string data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t key = data.find("k5");
  const size_t header = data.rfind("\xCE\xD1\xED\x5E", key);  // the record's magic
  ASSERT_NE(header, std::string::npos);
  f.seekp(static_cast<std::streamoff>(header + 5));
  f.put('\x7f');  // its length: the header CRC fails
  f.close();
  auto log = Open();
  EXPECT_EQ(log->lost_records(), 1u);
  EXPECT_EQ(log->entries().at("w").size(), 19u);
  EXPECT_EQ(log->entries().at("w").count("k19"), 1u);
}

// Files written before commits had end markers: every sound record counts, as it did.
TEST_F(CheckpointLogTest, AFileWithoutEndMarkersIsReadWhole) {
  std::string file;
  uint64_t sequence = 1;
  auto put = [&](std::string_view component, std::string_view key, std::string_view value) {
    std::string body;
    util::PutFixed16(body, static_cast<uint16_t>(component.size()));
    body.append(component);
    util::PutFixed32(body, static_cast<uint32_t>(key.size()));
    body.append(key);
    body.append(value);
    EncodeRecord(sequence++, 1, body, file);
  };
  put("window", "k:a", "1");
  put("window", "k:b", "2");
  std::filesystem::create_directories(dir_);
  {
    std::ofstream out(dir_ + "/state.log", std::ios::binary);
    out << file;
  }
  {
    auto log = Open();
    EXPECT_EQ(log->entries().at("window").at("k:a"), "1");
    EXPECT_EQ(log->entries().at("window").at("k:b"), "2");
    EXPECT_EQ(log->lost_records(), 0u);
    log->Put("window", "k:c", "3");
    ASSERT_TRUE(log->Commit().ok());
  }
  auto log = Open();
  EXPECT_EQ(log->entries().at("window").size(), 3u);
  EXPECT_EQ(log->lost_records(), 0u);
}

TEST_F(CheckpointLogTest, TheFramingUsedBefore03IsReadAndRewritten) {
  // [u32 length][u32 masked CRC-32C][u8 op][u16 component length][component]
  // [u32 key length][key][value], as written before the queue's framing was shared.
  std::string file;
  auto legacy = [&](std::string_view component, std::string_view key, std::string_view value) {
    std::string body;
    body.push_back(1);
    util::PutFixed16(body, static_cast<uint16_t>(component.size()));
    body.append(component);
    util::PutFixed32(body, static_cast<uint32_t>(key.size()));
    body.append(key);
    body.append(value);
    util::PutFixed32(file, static_cast<uint32_t>(body.size()));
    util::PutFixed32(file, util::MaskCrc(util::Crc32c(body)));
    file.append(body);
  };
  legacy("window", "k:a", "1");
  legacy("window", "k:b", "2");
  std::filesystem::create_directories(dir_);
  {
    std::ofstream out(dir_ + "/state.log", std::ios::binary);
    out << file;
  }
  {
    auto log = Open();
    EXPECT_EQ(log->entries().at("window").at("k:a"), "1");
    EXPECT_EQ(log->entries().at("window").at("k:b"), "2");
    EXPECT_EQ(log->lost_records(), 0u);
  }
  std::ifstream in(dir_ + "/state.log", std::ios::binary);
  std::string now((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GE(now.size(), 4u);
  EXPECT_EQ(util::GetFixed32(now.data()), kRecordMagic);  // rewritten in the current framing
  auto log = Open();
  EXPECT_EQ(log->entries().at("window").at("k:b"), "2");
}

}  // namespace
}  // namespace seedance::storage
