#include "sinks/common/event_encoding.h"

#include <gtest/gtest.h>

namespace seedance::sinks {
namespace {

Event EncodingEvent(std::string payload, PayloadFormat f = PayloadFormat::kJson) {
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
  std::vector<Event> events = {EncodingEvent(R"({"a": 1})"),
                               EncodingEvent("raw\"text", PayloadFormat::kRaw)};
  std::string array, nd, single;
  AppendBatch(events, EventEncoding::kPayload, BatchFormat::kJsonArray, array);
  AppendBatch(events, EventEncoding::kPayload, BatchFormat::kNdjson, nd);
  AppendBatch({events[1]}, EventEncoding::kPayload, BatchFormat::kSingle, single);
  EXPECT_EQ(array, R"([{"a": 1},"raw\"text"])");
  EXPECT_EQ(nd, "{\"a\": 1}\n\"raw\\\"text\"\n");
  EXPECT_EQ(single, "raw\"text");
}

TEST(EventEncodingTest, EnvelopeCarriesTopicTimeAndHeaders) {
  Event e = EncodingEvent(R"({"a":1})");
  e.SetHeader("reason", "bad");
  std::string out;
  AppendEvent(e, EventEncoding::kEnvelope, true, out);
  EXPECT_EQ(
      out,
      R"({"id":7,"source":"mqtt","topic":"t/1","time":"2023-11-14T22:13:20.123456Z","payload":{"a":1},"headers":{"reason":"bad"}})");
}

TEST(EventEncodingTest, BytesThatAreNotUtf8StayValidJsonAndLoseNothing) {
  const std::string bytes("ok\xff\xfe\xc3(", 6);  // invalid UTF-8
  Event raw = EncodingEvent(bytes, PayloadFormat::kRaw);
  raw.SetHeader("reason", std::string("bad \xe2\x82", 6));  // truncated sequence
  raw.topic = std::string("t/\xc0\xaf", 4);                 // overlong '/'
  std::string envelope, alone;
  AppendEvent(raw, EventEncoding::kEnvelope, true, envelope);
  AppendEvent(raw, EventEncoding::kPayload, true, alone);
  EXPECT_EQ(
      envelope,
      R"({"id":7,"source":"mqtt","topic":"t/\ufffd\ufffd","time":"2023-11-14T22:13:20.123456Z","payload_base64":"b2v//sMo","headers":{"reason":"bad \ufffd\ufffd"}})");
  EXPECT_EQ(alone, R"({"payload_base64":"b2v//sMo"})");
  // Valid UTF-8 (2-, 3- and 4-byte forms) is kept as it is.
  std::string text;
  AppendEvent(EncodingEvent("h\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", PayloadFormat::kRaw),
              EventEncoding::kPayload, true, text);
  EXPECT_EQ(text, "\"h\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
}

TEST(EventEncodingTest, ABatchBodyIsAllocatedOnceAtItsEstimatedSize) {
  // Growing a large body by doubling would copy it and hold two blocks at once.
  for (EventEncoding encoding : {EventEncoding::kPayload, EventEncoding::kEnvelope}) {
    std::vector<Event> events;
    for (int i = 0; i < 500; ++i) {
      Event e = EncodingEvent(
          R"({"device":")" + std::to_string(i) + R"(","pad":")" + std::string(1000, 'x') + R"("})",
          i % 7 == 0 ? PayloadFormat::kRaw : PayloadFormat::kJson);
      e.id = 1'000'000'000'000u + static_cast<uint64_t>(i);
      if (i % 3 == 0) e.SetHeader("x-reason", "a header value");
      events.push_back(std::move(e));
    }
    for (BatchFormat format : {BatchFormat::kJsonArray, BatchFormat::kNdjson}) {
      std::string body;
      AppendBatch(events, encoding, format, body);
      const size_t reserved = body.capacity();
      // Within the first reservation: no regrowth, and not much more than needed.
      EXPECT_LE(body.size(), reserved);
      EXPECT_LT(static_cast<double>(reserved), 1.15 * static_cast<double>(body.size()));
    }
  }
}

}  // namespace
}  // namespace seedance::sinks
