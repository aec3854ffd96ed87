// OpenFiles: which file is closed to make room, halving when the process runs out of
// descriptors, and raising the budget again once the shortage is over. Time is driven by the
// test; the descriptors are real (/dev/null).
#include "sources/tail/open_files.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <vector>

namespace seedance::sources {
namespace {

using std::chrono::seconds;
const OpenFiles::Clock::time_point kStart{seconds(1000)};

class OpenFilesTest : public ::testing::Test {
 protected:
  ~OpenFilesTest() override {
    for (auto& t : tracked_) {
      if (t->fd >= 0) ::close(t->fd);
    }
  }

  // Opens one more file the way the source does: room first, then the open.
  TrackedFile& Open(OpenFiles& files) {
    files.MakeRoom(nullptr, [](const TrackedFile&) { return false; });
    tracked_.push_back(std::make_unique<TrackedFile>(1024));
    const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    EXPECT_GE(fd, 0);
    files.Opened(*tracked_.back(), fd);
    return *tracked_.back();
  }
  size_t OpenCount() const {
    size_t n = 0;
    for (const auto& t : tracked_) n += t->fd >= 0 ? 1 : 0;
    return n;
  }

  observe::MetricsRegistry metrics_;
  std::vector<std::unique_ptr<TrackedFile>> tracked_;
};

TEST_F(OpenFilesTest, MakeRoomClosesAQuietFileFirstElseTheLeastRecentlyActive) {
  OpenFiles files(3, "tail", metrics_);
  TrackedFile& a = Open(files);
  TrackedFile& b = Open(files);
  TrackedFile& c = Open(files);
  files.Touch(a);  // order now: b, c, a
  files.MakeRoom(nullptr, [&](const TrackedFile& t) { return &t == &c; });
  EXPECT_LT(c.fd, 0);  // quiet: closed although b is less recently active
  EXPECT_GE(b.fd, 0);
  TrackedFile& d = Open(files);  // b, a, d
  files.MakeRoom(&b, [](const TrackedFile&) { return false; });
  EXPECT_GE(b.fd, 0);  // kept: the one being opened again
  EXPECT_LT(a.fd, 0);
  EXPECT_GE(d.fd, 0);
}

TEST_F(OpenFilesTest, OutOfDescriptorsHalvesWhatIsOpenNeverTheFileBeingOpened) {
  OpenFiles files(8, "tail", metrics_);
  TrackedFile& oldest = Open(files);
  for (int i = 0; i < 7; ++i) Open(files);
  files.OutOfDescriptors(&oldest, EMFILE, kStart);
  EXPECT_EQ(files.budget(), 4u);
  EXPECT_EQ(OpenCount(), 4u);
  EXPECT_GE(oldest.fd, 0);
  for (int i = 0; i < 4; ++i) files.OutOfDescriptors(nullptr, EMFILE, kStart);
  EXPECT_EQ(files.budget(), 1u);  // never below one
  EXPECT_EQ(OpenCount(), 1u);
}

// Before, a lowered budget stayed lowered until a restart.
TEST_F(OpenFilesTest, ALoweredBudgetIsDoubledAfterEachCalmMinuteUpToWhatItWas) {
  OpenFiles files(16, "tail", metrics_);
  for (int i = 0; i < 16; ++i) Open(files);
  files.OutOfDescriptors(nullptr, EMFILE, kStart);
  files.OutOfDescriptors(nullptr, ENFILE, kStart + seconds(30));  // again: the clock restarts
  ASSERT_EQ(files.budget(), 4u);
  files.RaiseWhenCalm(kStart + seconds(89));
  EXPECT_EQ(files.budget(), 4u);
  files.RaiseWhenCalm(kStart + seconds(90));
  EXPECT_EQ(files.budget(), 8u);
  files.RaiseWhenCalm(kStart + seconds(149));  // a minute after the raise, not the shortage
  EXPECT_EQ(files.budget(), 8u);
  files.RaiseWhenCalm(kStart + seconds(150));
  EXPECT_EQ(files.budget(), 16u);
  files.RaiseWhenCalm(kStart + seconds(1000));
  EXPECT_EQ(files.budget(), 16u);            // never above max_open_files
  for (int i = 0; i < 12; ++i) Open(files);  // the budget is used again
  EXPECT_EQ(OpenCount(), 16u);
}

}  // namespace
}  // namespace seedance::sources
