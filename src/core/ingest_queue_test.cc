#include "core/ingest_queue.h"

#include <gtest/gtest.h>

#include <mutex>

namespace seedance {
namespace {

class Recorder : public Acknowledger {
 public:
  void Acknowledge(uint64_t token) override {
    std::lock_guard<std::mutex> lock(mu);
    tokens.push_back(token);
  }
  std::mutex mu;
  std::vector<uint64_t> tokens;
};

std::vector<Event> Events(int n) {
  std::vector<Event> out(n);
  for (int i = 0; i < n; ++i) out[i].payload = "{\"i\":" + std::to_string(i) + "}";
  return out;
}

TEST(IngestQueueTest, TryPushAllTakesEverythingOrNothing) {
  EventLoop loop;
  IngestQueue queue(5, loop);
  Recorder owner;
  auto three = Events(3);
  ASSERT_TRUE(queue.TryPushAll(three, &owner, 100));
  auto again = Events(3);  // 3 + 3 > 5: none of them
  EXPECT_FALSE(queue.TryPushAll(again, &owner, 200));
  EXPECT_EQ(queue.size(), 3u);
  EXPECT_EQ(again[2].payload, "{\"i\":2}") << "a refused request must be left untouched";
  auto two = Events(2);
  ASSERT_TRUE(queue.TryPushAll(two, &owner, 300));

  std::vector<IngestItem> items;
  ASSERT_TRUE(queue.PopBatch(items, 10, std::chrono::milliseconds(10)));
  ASSERT_EQ(items.size(), 5u);
  for (const IngestItem& item : items) item.ack.Ack();
  EXPECT_EQ(owner.tokens, (std::vector<uint64_t>{100, 101, 102, 300, 301}));
  EXPECT_EQ(items[4].event.payload, "{\"i\":1}");
}

}  // namespace
}  // namespace seedance
