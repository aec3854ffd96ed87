#include "core/event_pool.h"

#include <gtest/gtest.h>

namespace seedance {
namespace {

Event WithPayload(size_t bytes) {
  Event e;
  e.id = 7;
  e.source = "a-source-name-longer-than-sso";
  e.topic = "sensors/room-1/temperature";
  e.payload.assign(bytes, 'x');
  e.headers.push_back(Header{"h", "v"});
  return e;
}

TEST(EventPoolTest, AGivenEventComesBackEmptyWithItsStorage) {
  EventPool pool;
  Event e = WithPayload(100);
  const char* storage = e.payload.data();
  pool.Give(e);
  EXPECT_EQ(pool.size(), 1u);
  Event back = pool.Take();
  EXPECT_EQ(back.payload.data(), storage);
  EXPECT_TRUE(back.payload.empty());
  EXPECT_TRUE(back.source.empty());
  EXPECT_TRUE(back.topic.empty());
  EXPECT_TRUE(back.headers.empty());
  EXPECT_EQ(back.id, 0u);
  EXPECT_EQ(pool.size(), 0u);
  EXPECT_EQ(pool.payload_bytes(), 0u);
}

TEST(EventPoolTest, HoldsAtMost128Events) {
  EventPool pool;
  for (int i = 0; i < 200; ++i) {
    Event e = WithPayload(100);
    pool.Give(e);
  }
  EXPECT_EQ(pool.size(), EventPool::kMaxEvents);
  EXPECT_EQ(EventPool::kMaxEvents, 128u);
}

TEST(EventPoolTest, HoldsAtMost1MiBOfPayloadStorageAndNoPayloadOver16KiB) {
  EventPool pool;
  Event large = WithPayload(16 * 1024 + 1);
  pool.Give(large);
  EXPECT_EQ(pool.size(), 0u) << "a payload buffer over 16 KiB is not kept";
  EXPECT_EQ(large.payload.size(), 16u * 1024 + 1) << "an event not kept is left untouched";
  for (int i = 0; i < 100; ++i) {
    Event e = WithPayload(16 * 1024);
    pool.Give(e);
  }
  EXPECT_LE(pool.payload_bytes(), 1024u * 1024);
  EXPECT_EQ(pool.size(), 1024u * 1024 / (16 * 1024));
}

TEST(EventPoolTest, GiveAllKeepsWhatFitsOfABatch) {
  EventPool pool;
  std::vector<IngestItem> items(150);
  for (IngestItem& item : items) item.event = WithPayload(100);
  pool.GiveAll(items);
  EXPECT_EQ(pool.size(), EventPool::kMaxEvents);
  EXPECT_EQ(items.back().event.payload.size(), 100u) << "those not kept are left untouched";
}

TEST(EventPoolTest, AnEmptyPoolGivesANewEvent) {
  EventPool pool;
  Event e = pool.Take();
  EXPECT_TRUE(e.payload.empty());
  EXPECT_EQ(pool.size(), 0u);
}

}  // namespace
}  // namespace seedance
