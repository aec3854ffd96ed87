#include "http/connection_slots.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace seedance::http {
namespace {

TEST(ConnectionSlotsTest, CountsPerClientAndClosesTheLongestIdleFirst) {
  ConnectionSlots slots(4, 2);
  std::vector<int> closed;
  auto add = [&](const std::string& client, int n) {
    return slots.Add(client, [&closed, n] { closed.push_back(n); });
  };
  const auto a1 = add("10.0.0.1", 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  const auto a2 = add("10.0.0.1", 2);
  add("10.0.0.2", 3);
  EXPECT_EQ(slots.open(), 3u);
  EXPECT_EQ(slots.open_from("10.0.0.1"), 2u);
  EXPECT_TRUE(slots.client_full("10.0.0.1"));
  EXPECT_FALSE(slots.client_full("10.0.0.2"));
  EXPECT_FALSE(slots.full());

  // Of that client: the older idle one goes; a busy one never does.
  slots.SetIdle(a1, false);
  const std::string one = "10.0.0.1";
  ASSERT_TRUE(slots.CloseIdlest(&one));
  EXPECT_EQ(closed, std::vector<int>{2});
  EXPECT_FALSE(slots.CloseIdlest(&one));  // a2 is closing already, a1 busy
  slots.Remove(a2);
  EXPECT_EQ(slots.open_from("10.0.0.1"), 1u);

  // Overall: the longest idle of all.
  ASSERT_TRUE(slots.CloseIdlest());
  EXPECT_EQ(closed, (std::vector<int>{2, 3}));
  slots.SetIdle(a1, true);  // idle again: from now
  ASSERT_TRUE(slots.CloseIdlest());
  EXPECT_EQ(closed, (std::vector<int>{2, 3, 1}));
  slots.Remove(a1);
  EXPECT_EQ(slots.open_from("10.0.0.1"), 0u);
}

TEST(ConnectionSlotsTest, FullAtTheTotal) {
  ConnectionSlots slots(2, 2);
  slots.Add("a", [] {});
  EXPECT_FALSE(slots.full());
  slots.Add("b", [] {});
  EXPECT_TRUE(slots.full());
}

}  // namespace
}  // namespace seedance::http
