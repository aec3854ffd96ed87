#include "storage/state_files.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "testing/test_dir.h"

namespace seedance::storage {
namespace {

TEST(StateFilesTest, ReplaceThenReadAndNoFileIsNotFound) {
  StateFileStore store(testing::FreshTestDir("state_files_test"));
  auto none = store.Read("tail/x.positions");
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code(), StatusCode::kNotFound);
  ASSERT_TRUE(store.Replace("tail/x.positions", "1 2 3\n").ok());
  auto back = store.Read("tail/x.positions");
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(*back, "1 2 3\n");
}

TEST(StateFilesTest, AFileLargerThanTheBoundIsRefusedNamingTheBound) {
  const std::string dir = testing::FreshTestDir("state_files_test");
  std::filesystem::create_directories(dir);
  { std::ofstream create(dir + "/big"); }
  // Sparse: one byte past the bound, without writing 64 MiB.
  std::filesystem::resize_file(dir + "/big", StateFileStore::kMaxBytes + 1);
  StateFileStore store(dir);
  auto big = store.Read("big");
  ASSERT_FALSE(big);
  EXPECT_NE(big.error().message().find("larger than 67108864 bytes"), std::string::npos)
      << big.error().message();
  std::filesystem::resize_file(dir + "/big", StateFileStore::kMaxBytes);  // at the bound: read
  EXPECT_TRUE(store.Read("big"));
}

}  // namespace
}  // namespace seedance::storage
