#include "core/ingest_queue.h"

#include <gtest/gtest.h>

#include <mutex>
#include <thread>

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

// Runs the callbacks the queue posted to the loop (on this thread).
void RunPosted(EventLoop& loop) {
  loop.io().restart();
  loop.io().poll();
}

// A scraped page may hold more samples than fit beside what is queued, or than the whole
// queue: all of it or nothing, so it enters once the queue has drained to half (when single
// events would be let in again: never refused for ever, never starved by other sources).
TEST(IngestQueueTest, ABatchThatDoesNotFitEntersOnceTheQueueDrainedToHalf) {
  EventLoop loop;
  IngestQueue queue(5, loop);
  Recorder owner;
  auto three = Events(3);
  ASSERT_TRUE(queue.TryPushAll(three, &owner, 1));
  auto page = Events(8);
  EXPECT_FALSE(queue.TryPushAll(page, &owner, 10)) << "8 beside 3 in a queue of 5: none";
  bool woken = false;
  queue.WhenRoomFor(8, [&] { woken = true; });
  RunPosted(loop);
  EXPECT_FALSE(woken) << "3 of 5: not drained to half";
  std::vector<IngestItem> items;
  ASSERT_TRUE(queue.PopBatch(items, 1, std::chrono::milliseconds(10)));  // 2 left: half
  RunPosted(loop);
  EXPECT_TRUE(woken);
  ASSERT_TRUE(queue.TryPushAll(page, &owner, 10));
  EXPECT_EQ(queue.size(), 10u) << "the whole page, over the capacity";
  Event more;
  EXPECT_FALSE(queue.TryPush(more, AckHandle{})) << "nothing else until drained";
  auto another = Events(1);
  EXPECT_FALSE(queue.TryPushAll(another, &owner, 20));
}

TEST(IngestQueueTest, AWaiterForSeveralEventsIsWokenAtHalfNotWhileTheQueueIsFuller) {
  EventLoop loop;
  IngestQueue queue(10, loop);
  Recorder owner;
  auto nine = Events(9);
  ASSERT_TRUE(queue.TryPushAll(nine, &owner, 1));
  bool four = false, one = false;
  queue.WhenRoomFor(4, [&] { four = true; });
  queue.WhenWritable([&] { one = true; });  // 9 of 10: room for one now
  RunPosted(loop);
  EXPECT_TRUE(one);
  EXPECT_FALSE(four);
  std::vector<IngestItem> items;
  ASSERT_TRUE(queue.PopBatch(items, 3, std::chrono::milliseconds(10)));  // 6 left
  RunPosted(loop);
  EXPECT_FALSE(four) << "not drained to half: one wake-up per half queue";
  ASSERT_TRUE(queue.PopBatch(items, 1, std::chrono::milliseconds(10)));  // 5 left: half
  RunPosted(loop);
  EXPECT_TRUE(four);
  auto page = Events(4);
  EXPECT_TRUE(queue.TryPushAll(page, &owner, 100));
}

// Pushes made by one event-loop handler wake the processing thread once, after the handler:
// the consumer gets them as one batch even though the handler paused between pushes.
TEST(IngestQueueTest, OneWakeUpPerEventLoopTurn) {
  EventLoop loop;
  IngestQueue queue(100, loop);
  std::vector<IngestItem> first;
  std::thread consumer([&] { queue.PopBatch(first, 100, std::chrono::seconds(10)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the consumer is waiting
  loop.Post([&] {
    for (int i = 0; i < 10; ++i) {
      Event e;
      ASSERT_TRUE(queue.TryPush(e, AckHandle{}));
      // A consumer woken per push would take the first event alone during this pause.
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  std::thread io([&] { loop.io().run_for(std::chrono::seconds(2)); });
  consumer.join();
  loop.io().stop();
  io.join();
  EXPECT_EQ(first.size(), 10u);
}

}  // namespace
}  // namespace seedance
