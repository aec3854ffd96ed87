#include "util/ring_queue.h"

#include <gtest/gtest.h>

#include <deque>
#include <random>
#include <string>

namespace seedance::util {
namespace {

TEST(RingQueueTest, BehavesLikeADequeUnderRandomPushesAndPops) {
  RingQueue<std::string> ring;
  std::deque<std::string> model;
  std::mt19937 rng(7);
  for (int i = 0; i < 20000; ++i) {
    // Bursts that grow past the shrink size, and drains back to empty.
    const bool push = (i / 3000) % 2 == 0 ? rng() % 4 != 0 : rng() % 4 == 0;
    if (push) {
      std::string v = "value-" + std::to_string(i) + std::string(i % 40, 'x');
      model.push_back(v);
      ring.push_back(std::move(v));
    } else if (!model.empty()) {
      ASSERT_EQ(ring.front(), model.front()) << i;
      ring.pop_front();
      model.pop_front();
    }
    ASSERT_EQ(ring.size(), model.size());
    ASSERT_EQ(ring.empty(), model.empty());
  }
  while (!model.empty()) {
    ASSERT_EQ(ring.front(), model.front());
    ring.pop_front();
    model.pop_front();
  }
  EXPECT_TRUE(ring.empty());
}

}  // namespace
}  // namespace seedance::util
