// A fresh directory for the running test: <tmp>/<prefix>_<pid>_<test name>, emptied first
// (a previous run's leftovers must not leak in).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace seedance::testing {

inline std::string FreshTestDir(const std::string& prefix) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      (prefix + "_" + std::to_string(::getpid()) + "_" +
       ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::remove_all(dir);
  return dir.string();
}

}  // namespace seedance::testing
