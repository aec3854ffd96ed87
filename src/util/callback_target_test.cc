#include "util/callback_target.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <thread>
#include <vector>

namespace seedance::util {
namespace {

struct Counter {
  int calls = 0;
};

TEST(CallbackTargetTest, ACallbackFindsItsTargetUntilDetached) {
  Counter c;
  CallbackTarget<Counter> target(&c);
  void* closure = target.closure();
  EXPECT_TRUE(CallbackTarget<Counter>::With(closure, [](Counter& x) { ++x.calls; }));
  EXPECT_EQ(c.calls, 1);
  target.Detach();
  EXPECT_FALSE(target.attached());
  EXPECT_FALSE(CallbackTarget<Counter>::With(closure, [](Counter& x) { ++x.calls; }));
  EXPECT_EQ(c.calls, 1);
}

TEST(CallbackTargetTest, AStaleClosureNeverFindsALaterTarget) {
  void* stale = nullptr;
  {
    Counter first;
    CallbackTarget<Counter> target(&first);
    stale = target.closure();
  }  // destroyed: detached
  Counter second;
  CallbackTarget<Counter> later(&second);
  EXPECT_NE(later.closure(), stale);
  EXPECT_FALSE(CallbackTarget<Counter>::With(stale, [](Counter& x) { ++x.calls; }));
  EXPECT_FALSE(CallbackKey::With(nullptr, [](void*) {}));
  EXPECT_EQ(second.calls, 0);
}

// Detach returns only after a callback that is running has returned: the owner may destroy the
// target right after it.
TEST(CallbackTargetTest, DetachWaitsForARunningCallback) {
  Counter c;
  auto target = std::make_unique<CallbackTarget<Counter>>(&c);
  void* closure = target->closure();
  std::promise<void> entered;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> callback_done{false};
  std::thread library([&] {
    CallbackTarget<Counter>::With(closure, [&](Counter& x) {
      entered.set_value();
      released.wait();
      ++x.calls;
      callback_done = true;
    });
  });
  entered.get_future().wait();
  std::atomic<bool> detached{false};
  std::thread owner([&] {
    target->Detach();
    detached = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(detached.load()) << "Detach returned while a callback was running";
  release.set_value();
  owner.join();
  library.join();
  EXPECT_TRUE(detached.load());
  EXPECT_TRUE(callback_done.load());
  EXPECT_EQ(c.calls, 1);
}

// Callbacks on several threads while targets come and go: a callback only ever touches a live
// target (the sanitizer build would report a use after free), and none runs after Detach.
TEST(CallbackTargetTest, CallbacksRacingDestructionNeverTouchAFreedTarget) {
  constexpr int kRounds = 200;
  constexpr int kThreads = 3;
  for (int round = 0; round < kRounds; ++round) {
    auto owned = std::make_unique<Counter>();
    auto target = std::make_unique<CallbackTarget<Counter>>(owned.get());
    void* closure = target->closure();
    std::atomic<bool> stop{false};
    std::atomic<int> after_detach{0};
    std::atomic<bool> detached{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&] {
        for (int i = 0; i < 1000 && !stop; ++i) {
          CallbackTarget<Counter>::With(closure, [&](Counter& x) {
            if (detached) ++after_detach;
            ++x.calls;
          });
        }
      });
    }
    target->Detach();
    detached = true;
    owned.reset();  // what the owner does next: its memory is gone
    stop = true;
    for (auto& t : threads) t.join();
    EXPECT_EQ(after_detach.load(), 0);
  }
}

}  // namespace
}  // namespace seedance::util
