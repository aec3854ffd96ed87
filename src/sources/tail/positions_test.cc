#include "sources/tail/positions.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "storage/state_files.h"
#include "testing/fault_file_system.h"

namespace seedance::sources {
namespace {

TEST(TailPositionsTest, FormatAndParseRoundTrip) {
  const std::vector<FilePosition> positions{{2049, 17, 4096, 0xdeadbeef, 256, "/var/log/app.log"},
                                            {2049, 18, 0, 0, 0, "/var/log/with space.log"}};
  EXPECT_EQ(ParsePositions(FormatPositions(positions)), positions);
  // A newline in a path cannot end its entry early.
  const std::vector<FilePosition> odd{{1, 2, 3, 4, 5, "/a\nb"}};
  EXPECT_EQ(ParsePositions(FormatPositions(odd))[0].path, "/a?b");
}

TEST(TailPositionsTest, UnreadableLinesAreSkippedNotFatal) {
  const auto loaded = ParsePositions("garbage\n1 2 3 4 5 /ok\n5 x\n");
  ASSERT_EQ(loaded.size(), 1u);
  EXPECT_EQ(loaded[0], (FilePosition{1, 2, 3, 4, 5, "/ok"}));
}

// The positions are written through the storage layer's file system: a disk that fails
// leaves the last saved positions whole, and the next save after it recovers lands.
TEST(TailPositionsTest, ASaveThatFailsLeavesThePreviousPositions) {
  const std::string dir = "/tmp/tail_positions_fault_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir + "/tail");
  testing::FaultFileSystem fs(dir);
  storage::StateFileStore store(dir, fs);
  const std::string name = "tail/logs.positions";
  EXPECT_EQ(store.Read(name).error().code(), StatusCode::kNotFound);
  const std::vector<FilePosition> first{{2049, 17, 4096, 0xdeadbeef, 256, "/var/log/app.log"}};
  ASSERT_TRUE(store.Replace(name, FormatPositions(first)).ok());
  const std::vector<FilePosition> second{{2049, 17, 8192, 0xdeadbeef, 256, "/var/log/app.log"}};
  for (auto op : {testing::FaultFileSystem::Op::kWrite, testing::FaultFileSystem::Op::kFdatasync,
                  testing::FaultFileSystem::Op::kRename}) {
    fs.FailNext(op, EIO);
    Status s = store.Replace(name, FormatPositions(second));
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message().find("Input/output error"), std::string::npos) << s.message();
    EXPECT_EQ(ParsePositions(store.Read(name).value()), first);
  }
  ASSERT_TRUE(store.Replace(name, FormatPositions(second)).ok());
  EXPECT_EQ(ParsePositions(store.Read(name).value()), second);
  // A power cut after the save keeps it: the file and the rename were made durable.
  fs.DropUnsyncedData();
  EXPECT_EQ(ParsePositions(store.Read(name).value()), second);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace seedance::sources
