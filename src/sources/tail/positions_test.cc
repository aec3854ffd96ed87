#include "sources/tail/positions.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace seedance::sources {
namespace {

TEST(TailPositionsTest, SaveAndLoadRoundTripAndTheFileIsReplacedWhole) {
  const std::string dir = "/tmp/tail_positions_test_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/p.positions";
  EXPECT_TRUE(LoadPositions(path).empty());
  const std::vector<FilePosition> first{{2049, 17, 4096, 0xdeadbeef, 256, "/var/log/app.log"},
                                        {2049, 18, 0, 0, 0, "/var/log/with space.log"}};
  ASSERT_TRUE(SavePositions(path, first).ok());
  EXPECT_EQ(LoadPositions(path), first);
  const std::vector<FilePosition> second{{2049, 17, 8192, 0xdeadbeef, 256, "/var/log/app.log.1"}};
  ASSERT_TRUE(SavePositions(path, second).ok());
  EXPECT_EQ(LoadPositions(path), second);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  std::filesystem::remove_all(dir);
}

TEST(TailPositionsTest, UnreadableLinesAreSkippedNotFatal) {
  const std::string dir = "/tmp/tail_positions_bad_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/p.positions";
  std::ofstream(path) << "garbage\n1 2 3 4 5 /ok\n5 x\n";
  const auto loaded = LoadPositions(path);
  ASSERT_EQ(loaded.size(), 1u);
  EXPECT_EQ(loaded[0], (FilePosition{1, 2, 3, 4, 5, "/ok"}));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace seedance::sources
