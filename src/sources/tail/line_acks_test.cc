#include "sources/tail/line_acks.h"

#include <gtest/gtest.h>

#include <thread>

namespace seedance::sources {
namespace {

TEST(LineAcksTest, ALineIsStoredWhenAcknowledgedOnce) {
  LineAcks acks;
  const uint64_t a = acks.Register({1, 0, 10});
  const uint64_t b = acks.Register({1, 0, 20});
  acks.Done({1, 0, 21});  // a blank line after them
  EXPECT_EQ(acks.TakeStored(), (std::vector<StoredLine>{{1, 0, 21}}));
  acks.Acknowledge(b);
  acks.Acknowledge(b);    // twice: once counts
  acks.Acknowledge(999);  // unknown: ignored
  acks.Acknowledge(a);
  EXPECT_EQ(acks.TakeStored(), (std::vector<StoredLine>{{1, 0, 20}, {1, 0, 10}}));
  EXPECT_TRUE(acks.TakeStored().empty());
}

TEST(LineAcksTest, AWithdrawnLineIsNeverStored) {
  LineAcks acks;
  const uint64_t a = acks.Register({1, 0, 10});
  acks.Withdraw(a);
  acks.Acknowledge(a);
  EXPECT_TRUE(acks.TakeStored().empty());
  EXPECT_EQ(acks.Register({1, 0, 10}), a);  // the refused line's token, offered again
}

TEST(LineAcksTest, AcknowledgementsFromAnotherThreadAllArrive) {
  LineAcks acks;
  std::vector<uint64_t> tokens;
  for (uint64_t i = 0; i < 1000; ++i) tokens.push_back(acks.Register({1, 0, i + 1}));
  std::thread pipeline([&] {
    for (uint64_t t : tokens) acks.Acknowledge(t);
  });
  size_t stored = 0;
  while (stored < tokens.size()) stored += acks.TakeStored().size();
  pipeline.join();
  EXPECT_EQ(stored, tokens.size());
}

}  // namespace
}  // namespace seedance::sources
