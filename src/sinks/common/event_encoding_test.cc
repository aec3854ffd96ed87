#include "sinks/common/event_encoding.h"

#include <gtest/gtest.h>

namespace seedance::sinks {
namespace {

Event Make(std::string payload, PayloadFormat f = PayloadFormat::kJson) {
  Event e;
  e.id = 7;
  e.source = "mqtt";
  e.topic = "t/1";
  e.event_time_ns = 1'700'000'000'123'456'000;
  e.payload = std::move(payload);
  e.format = f;
  return e;
}

TEST(EventEncodingTest, BatchesAsArrayOrNdjsonKeepingPayloadBytes) {
  std::vector<Event> events = {Make(R"({"a": 1})"), Make("raw\"text", PayloadFormat::kRaw)};
  std::string array, nd, single;
  AppendBatch(events, EventEncoding::kPayload, BatchFormat::kJsonArray, array);
  AppendBatch(events, EventEncoding::kPayload, BatchFormat::kNdjson, nd);
  AppendBatch({events[1]}, EventEncoding::kPayload, BatchFormat::kSingle, single);
  EXPECT_EQ(array, R"([{"a": 1},"raw\"text"])");
  EXPECT_EQ(nd, "{\"a\": 1}\n\"raw\\\"text\"\n");
  EXPECT_EQ(single, "raw\"text");
}

TEST(EventEncodingTest, EnvelopeCarriesTopicTimeAndHeaders) {
  Event e = Make(R"({"a":1})");
  e.SetHeader("reason", "bad");
  std::string out;
  AppendEvent(e, EventEncoding::kEnvelope, true, out);
  EXPECT_EQ(
      out,
      R"({"id":7,"source":"mqtt","topic":"t/1","time":"2023-11-14T22:13:20.123456Z","payload":{"a":1},"headers":{"reason":"bad"}})");
}

}  // namespace
}  // namespace seedance::sinks
