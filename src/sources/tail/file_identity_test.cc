// MatchFiles and OpenMatchedFile on real files: only regular files are matched, a directory
// that cannot be listed is reported (not read as "no files"), and a FIFO put in a file's place
// is refused without blocking.
#include "sources/tail/file_identity.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "testing/test_dir.h"

namespace seedance::sources {
namespace {

namespace fs = std::filesystem;

class FileIdentityTest : public ::testing::Test {
 protected:
  FileIdentityTest() : dir_(testing::FreshTestDir("file_identity_test")) {
    fs::create_directories(dir_);
  }
  ~FileIdentityTest() override { fs::remove_all(dir_); }

  FileId IdOf(const std::string& path) {
    struct stat st {};
    EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
    return FileIdOf(st);
  }

  const std::string dir_;
};

TEST_F(FileIdentityTest, OnlyRegularFilesAreMatched) {
  std::ofstream(dir_ + "/a.log") << "x\n";
  fs::create_directories(dir_ + "/d.log");
  ASSERT_EQ(::mkfifo((dir_ + "/p.log").c_str(), 0600), 0);
  std::map<FileId, MatchedFile> found;
  std::string error;
  int err = 0;
  ASSERT_TRUE(MatchFiles({dir_ + "/*.log"}, &found, &error, &err)) << error;
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found.begin()->second.path, dir_ + "/a.log");
  EXPECT_EQ(found.begin()->second.size, 2u);
}

// In a child process (it never returns): lowers the descriptor limit to the descriptors open
// now, matches `glob` and exits 0 when the directory was reported as not listed.
void ListWithNoDescriptorLeft(const std::string& glob) {
  const int lowest_free = ::dup(0);
  ::close(lowest_free);
  const rlimit rl{static_cast<rlim_t>(lowest_free), static_cast<rlim_t>(lowest_free)};
  if (::setrlimit(RLIMIT_NOFILE, &rl) != 0) std::_Exit(2);
  std::map<FileId, MatchedFile> found;
  std::string error;
  int err = 0;
  const bool listed = MatchFiles({glob}, &found, &error, &err);
  std::fprintf(stderr, "%s\n", error.c_str());
  std::_Exit(!listed && err == EMFILE ? 0 : 1);
}

// In a child process: exits 0 when the FIFO at `path` is refused; killed by SIGALRM if the
// open blocks.
void OpenFifoWithin5s(const std::string& path, const FileId& id) {
  ::alarm(5);
  std::_Exit(OpenMatchedFile(path, id) == kNotThatFile ? 0 : 1);
}

// Out of descriptors, glob(3) cannot open the directory: before, that read as "no file
// matches", and every file followed was taken as gone (let go, then read again from its start
// once the directory could be listed: each line twice).
TEST_F(FileIdentityTest, ADirectoryThatCannotBeListedIsReportedNotEmpty) {
  std::ofstream(dir_ + "/a.log") << "x\n";
  EXPECT_EXIT(ListWithNoDescriptorLeft(dir_ + "/*.log"), ::testing::ExitedWithCode(0),
              "cannot list .*file_identity_test.*: Too many open files");
}

TEST_F(FileIdentityTest, AFileIsOpenedOnlyIfItIsStillTheRegularFileMatched) {
  const std::string path = dir_ + "/a.log";
  std::ofstream(path) << "x\n";
  const FileId first = IdOf(path);
  const int fd = OpenMatchedFile(path, first);
  ASSERT_GE(fd, 0);
  ::close(fd);
  // Another file renamed over its name (the first kept alive by a second link, so that its
  // inode is not reused): not the file matched.
  fs::create_hard_link(path, dir_ + "/kept.log");
  std::ofstream(dir_ + "/b.log") << "y\n";
  fs::rename(dir_ + "/b.log", path);
  ASSERT_NE(IdOf(path), first);
  EXPECT_EQ(OpenMatchedFile(path, first), kNotThatFile);
  EXPECT_EQ(OpenMatchedFile(dir_ + "/gone.log", first), kOpenFailed);
  EXPECT_EQ(errno, ENOENT);
}

// A FIFO in a matched file's place: a blocking open would wait for a writer forever, and the
// tail with it. Opened without blocking and refused (the alarm fails the test if it blocks).
TEST_F(FileIdentityTest, AFifoInAFilesPlaceIsRefusedWithoutBlocking) {
  const std::string path = dir_ + "/p.log";
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  const FileId id = IdOf(path);
  EXPECT_EXIT(OpenFifoWithin5s(path, id), ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace seedance::sources
