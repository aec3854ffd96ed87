#include "governor/startup_pages.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "governor/heap.h"

namespace seedance::governor {
namespace {

// State in each kind of writable page start-up leaves behind: initialized data (.data), a
// relocated pointer in RELRO (a const table of pointers in a position-independent binary), a
// vtable reached through it, and the heap.
int g_written_at_start = 1;
const char* const kRelocated[] = {"relocated", "pointers"};

struct Shape {
  virtual ~Shape() = default;
  virtual int Sides() const = 0;
};
struct Triangle : Shape {
  int Sides() const override { return 3; }
};

TEST(StartupPagesTest, WrittenPagesAndCodeSurviveTheRelease) {
  g_written_at_start = 42;
  // Read through volatile pointers, so the compiler cannot fold what the test reads.
  const char* const* volatile relocated = kRelocated;
  int* volatile written = &g_written_at_start;
  std::unique_ptr<Shape> owner = std::make_unique<Triangle>();
  Shape* volatile shape = owner.get();
  std::vector<std::string> heap(1000, std::string(100, 'x'));

  const ReleasedPages released = ReleaseStartupPages();

  EXPECT_GT(released.segments, 0);
  EXPECT_EQ(*written, 42);
  EXPECT_STREQ(relocated[0], "relocated");
  EXPECT_STREQ(relocated[1], "pointers");
  EXPECT_EQ(shape->Sides(), 3);
  for (const std::string& s : heap) ASSERT_EQ(s, std::string(100, 'x'));
}

TEST(StartupPagesTest, TheResidentSetShrinks) {
  // This test binary has run tests before this one: their code is mapped.
  const ReleasedPages released = ReleaseStartupPages();
  ASSERT_GT(released.bytes_before, 0u);
  EXPECT_LT(released.bytes_after, released.bytes_before);
  // What faults back in is what runs after the release, not all of it at once.
  EXPECT_LT(ResidentBytes(), released.bytes_before);
}

}  // namespace
}  // namespace seedance::governor
