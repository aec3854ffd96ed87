#include "storage/checkpoint_log.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

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

TEST_F(CheckpointLogTest, CompactionKeepsTheLiveEntriesOnly) {
  auto log = Open();
  const std::string big(4096, 'x');
  for (int i = 0; i < 1000; ++i) {  // 4 MB written, one live entry
    log->Put("w", "k", big + std::to_string(i));
    ASSERT_TRUE(log->Commit().ok());
  }
  EXPECT_LT(log->file_bytes(), 1u << 20);
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

}  // namespace
}  // namespace seedance::storage
