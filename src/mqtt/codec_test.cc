#include "mqtt/codec.h"

#include <gtest/gtest.h>

namespace seedance::mqtt {
namespace {

std::string Bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s.push_back(static_cast<char>(c));
  return s;
}

std::string EncodeOrDie(const Packet& p, Version v) {
  std::string out;
  Status s = Encode(p, v, out);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

void ExpectRoundTrip(const Packet& p, Version v) {
  std::string bytes = EncodeOrDie(p, v);
  Result<Packet> back = DecodeWhole(bytes, v);
  ASSERT_TRUE(back.has_value()) << back.error().ToString();
  EXPECT_TRUE(*back == p) << PacketTypeName(TypeOf(p));
}

class CodecTest : public ::testing::TestWithParam<Version> {};

TEST_P(CodecTest, ConnectRoundTripsWithEveryOptionalField) {
  Connect c{.version = GetParam(),
            .client_id = "gw-1",
            .clean_start = false,
            .keep_alive_s = 45,
            .username = "user",
            .password = std::string("p\0w", 3)};
  c.will = Will{.topic = "gw/status", .payload = "offline", .qos = 1, .retain = true};
  if (GetParam() == Version::kV5) {
    c.props = {{.id = prop::kSessionExpiry, .number = 3600},
               {.id = prop::kReceiveMaximum, .number = 100}};
    c.will->props = {{.id = prop::kContentType, .text = "text/plain"}};
  }
  ExpectRoundTrip(c, GetParam());
  ExpectRoundTrip(Connect{.version = GetParam(), .client_id = ""}, GetParam());
}

TEST_P(CodecTest, ConnackRoundTrips) {
  Connack c{.session_present = true, .reason = 0};
  if (GetParam() == Version::kV5) c.props = {{.id = prop::kAssignedClientId, .text = "auto-1"}};
  ExpectRoundTrip(c, GetParam());
}

TEST_P(CodecTest, PublishRoundTripsAtEveryQos) {
  for (uint8_t qos = 0; qos <= 2; ++qos) {
    Publish p{.topic = "sensor/7/temperature",
              .payload = std::string("{\"t\":\0}", 8),
              .qos = qos,
              .retain = qos == 1,
              .dup = qos == 2,
              .packet_id = static_cast<uint16_t>(qos ? 4242 : 0)};
    if (GetParam() == Version::kV5) {
      p.props = {{.id = prop::kUserProperty, .text = "k", .value = "v"},
                 {.id = prop::kSubscriptionId, .number = 268435455},
                 {.id = prop::kCorrelationData, .text = std::string("\x01\x02", 2)}};
    }
    ExpectRoundTrip(p, GetParam());
  }
}

TEST_P(CodecTest, PubResponsesRoundTrip) {
  for (PacketType t :
       {PacketType::kPuback, PacketType::kPubrec, PacketType::kPubrel, PacketType::kPubcomp}) {
    ExpectRoundTrip(PubResponse{.type = t, .packet_id = 65535}, GetParam());
    if (GetParam() == Version::kV5) {
      ExpectRoundTrip(PubResponse{.type = t, .packet_id = 1, .reason = 0x10}, GetParam());
      ExpectRoundTrip(PubResponse{.type = t,
                                  .packet_id = 1,
                                  .reason = 0x80,
                                  .props = {{.id = prop::kReasonString, .text = "nope"}}},
                      GetParam());
    }
  }
}

TEST_P(CodecTest, SubscribeSubackUnsubscribeUnsubackRoundTrip) {
  Subscribe s{.packet_id = 9, .subscriptions = {{"a/+/c", 1}, {"#", 0}, {"$share/g/x", 2}}};
  if (GetParam() == Version::kV5) s.subscriptions[0].options |= 0x04;  // no-local
  ExpectRoundTrip(s, GetParam());
  ExpectRoundTrip(Suback{.packet_id = 9, .reasons = {1, 0, 0x80}}, GetParam());
  ExpectRoundTrip(Unsubscribe{.packet_id = 10, .filters = {"a/+/c", "#"}}, GetParam());
  Unsuback u{.packet_id = 10};
  if (GetParam() == Version::kV5) u.reasons = {0, 0x11};
  ExpectRoundTrip(u, GetParam());
}

TEST_P(CodecTest, PingAndDisconnectRoundTrip) {
  ExpectRoundTrip(PingReq{}, GetParam());
  ExpectRoundTrip(PingResp{}, GetParam());
  ExpectRoundTrip(Disconnect{}, GetParam());
  if (GetParam() == Version::kV5) {
    ExpectRoundTrip(
        Disconnect{.reason = 0x8E, .props = {{.id = prop::kReasonString, .text = "taken over"}}},
        GetParam());
  }
}

TEST_P(CodecTest, DecodePublishIntoMatchesDecodeAndReusesTheStrings) {
  const Version v = GetParam();
  Publish into;
  const char* kept_payload = nullptr;
  for (int i = 0; i < 3; ++i) {
    Publish p{.topic = "sensor/" + std::to_string(i) + "/temperature",
              .payload = std::string(300 - i * 50, static_cast<char>('a' + i)),
              .qos = static_cast<uint8_t>(i % 3),
              .retain = i == 1,
              .dup = i == 2,
              .packet_id = static_cast<uint16_t>(i % 3 ? 40 + i : 0)};
    std::string bytes = EncodeOrDie(p, v);
    auto frame = PeekFrame(bytes, 1 << 20);
    ASSERT_TRUE(frame.has_value() && frame->has_value());
    const FrameInfo& f = **frame;
    ASSERT_TRUE(
        DecodePublishInto(f.first_byte, std::string_view(bytes).substr(f.header_size), v, &into)
            .ok());
    Result<Packet> whole = DecodeWhole(bytes, v);
    ASSERT_TRUE(whole.has_value());
    EXPECT_EQ(into, std::get<Publish>(*whole));
    EXPECT_EQ(into, p);
    // Payloads get shorter: after the first, the same storage holds them.
    if (i == 0) kept_payload = into.payload.data();
    EXPECT_EQ(into.payload.data(), kept_payload);
  }
  // A malformed PUBLISH (wildcard topic) is refused like Decode refuses it.
  std::string bad = EncodeOrDie(Publish{.topic = "a/+", .payload = "x"}, v);
  auto frame = PeekFrame(bad, 1 << 20);
  ASSERT_TRUE(frame.has_value() && frame->has_value());
  EXPECT_FALSE(DecodePublishInto((**frame).first_byte,
                                 std::string_view(bad).substr((**frame).header_size), v, &into)
                   .ok());
}

INSTANTIATE_TEST_SUITE_P(BothVersions, CodecTest, ::testing::Values(Version::kV311, Version::kV5),
                         [](const auto& info) {
                           return info.param == Version::kV5 ? "V5" : "V311";
                         });

TEST(CodecBytesTest, EncodesPublishExactlyAsTheSpecSays) {
  Publish p{.topic = "a/b", .payload = "hi", .qos = 1, .packet_id = 10};
  EXPECT_EQ(EncodeOrDie(p, Version::kV311), Bytes({0x32, 9, 0, 3, 'a', '/', 'b', 0, 10, 'h', 'i'}));
  // MQTT 5 adds a property length (0).
  EXPECT_EQ(EncodeOrDie(p, Version::kV5),
            Bytes({0x32, 10, 0, 3, 'a', '/', 'b', 0, 10, 0, 'h', 'i'}));
}

TEST(CodecBytesTest, EncodePublishWritesWhatEncodeWrites) {
  Properties props = {{.id = prop::kContentType, .text = "application/json"},
                      {.id = prop::kUserProperty, .text = "k", .value = "v"}};
  for (Version v : {Version::kV311, Version::kV5}) {
    for (uint8_t qos : {0, 1, 2}) {
      Publish p{.topic = "site/42/x",
                .payload = std::string(300, 'p'),
                .qos = qos,
                .retain = qos == 1,
                .dup = qos == 2,
                .packet_id = static_cast<uint16_t>(qos == 0 ? 0 : 513),
                .props = props};
      std::string direct;
      ASSERT_TRUE(EncodePublish(p, v, direct).ok());
      EXPECT_EQ(direct, EncodeOrDie(p, v));
    }
  }
  std::string out;
  EXPECT_FALSE(EncodePublish(Publish{.topic = "t", .qos = 1}, Version::kV5, out).ok());
}

TEST(CodecBytesTest, EncodesConnectHeaderFlags) {
  Connect c{.version = Version::kV311,
            .client_id = "c",
            .clean_start = true,
            .keep_alive_s = 60,
            .username = "u",
            .password = "p"};
  EXPECT_EQ(EncodeOrDie(c, Version::kV311), Bytes({0x10, 19, 0, 4,   'M', 'Q', 'T', 'T', 4, 0xC2, 0,
                                                   60,   0,  1, 'c', 0,   1,   'u', 0,   1, 'p'}));
}

TEST(CodecBytesTest, PubrelHasFlagsTwoAndAuthIsFiveOnly) {
  EXPECT_EQ(EncodeOrDie(PubResponse{.type = PacketType::kPubrel, .packet_id = 1}, Version::kV311),
            Bytes({0x62, 2, 0, 1}));
  std::string out;
  EXPECT_EQ(Encode(Auth{}, Version::kV311, out).code(), StatusCode::kInvalidArgument);
  ExpectRoundTrip(Auth{.reason = 0x18, .props = {{.id = prop::kAuthMethod, .text = "SCRAM"}}},
                  Version::kV5);
}

TEST(CodecBytesTest, RemainingLengthUsesUpToFourBytes) {
  Publish p{.topic = "t", .payload = std::string(200000, 'x')};
  std::string bytes = EncodeOrDie(p, Version::kV311);
  auto frame = PeekFrame(bytes, 1 << 20);
  ASSERT_TRUE(frame.has_value() && frame->has_value());
  EXPECT_EQ((*frame)->header_size, 4u);  // 200003 needs three length bytes
  EXPECT_EQ((*frame)->remaining, 200003u);
}

TEST(CodecBytesTest, PeekFrameWaitsForMoreBytesAndRejectsOversize) {
  std::string bytes = EncodeOrDie(Publish{.topic = "t", .payload = "abc"}, Version::kV311);
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto f = PeekFrame(std::string_view(bytes).substr(0, n), 1024);
    ASSERT_TRUE(f.has_value());
    EXPECT_FALSE(f->has_value()) << n;
  }
  EXPECT_EQ(PeekFrame(bytes, 4).error().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(PeekFrame(Bytes({0x30, 0xFF, 0xFF, 0xFF, 0xFF, 0x01}), 1 << 30).error().code(),
            StatusCode::kInvalidArgument);
}

TEST(CodecBytesTest, MalformedPacketsAreRejected) {
  auto bad = [](std::string bytes, Version v = Version::kV311) {
    return DecodeWhole(bytes, v).error().code() == StatusCode::kInvalidArgument;
  };
  EXPECT_TRUE(bad(Bytes({0x36, 5, 0, 1, 't', 0, 1})));     // QoS 3
  EXPECT_TRUE(bad(Bytes({0x32, 5, 0, 1, 't', 0, 0})));     // packet id 0
  EXPECT_TRUE(bad(Bytes({0x30, 4, 0, 3, 'a', '/'})));      // topic longer than packet
  EXPECT_TRUE(bad(Bytes({0x30, 4, 0, 2, 'a', '#'})));      // wildcard in topic name
  EXPECT_TRUE(bad(Bytes({0x80, 6, 0, 1, 0, 1, 'a', 1})));  // SUBSCRIBE flags not 0b0010
  EXPECT_TRUE(bad(Bytes({0x60, 2, 0, 1})));                // PUBREL flags not 0b0010
  EXPECT_TRUE(bad(Bytes({0xC0, 1, 0})));                   // PINGREQ with a body
  EXPECT_TRUE(bad(Bytes({0x20, 2, 0x02, 0})));             // CONNACK reserved flag
  EXPECT_TRUE(bad(Bytes({0xF0, 0}), Version::kV311));      // AUTH in 3.1.1
  EXPECT_TRUE(bad(Bytes({0x00, 0})));                      // reserved type 0
  EXPECT_TRUE(bad(Bytes({0x30, 5, 0, 1, 't', 2, 0x7F}), Version::kV5));  // unknown property
}

}  // namespace
}  // namespace seedance::mqtt

namespace seedance::mqtt {
namespace {

// What the client needs to skip a PUBLISH too large to buffer: its length from the fixed
// header alone, and its topic and packet id from the first bytes of its body.
TEST(CodecPeekTest, FixedHeaderAndPublishHeadOfAnOversizedPacket) {
  Publish p{.topic = "t/big", .payload = std::string(300000, 'x'), .qos = 1, .packet_id = 42};
  std::string bytes = EncodeOrDie(p, Version::kV311);
  auto whole = PeekFrame(bytes, 1024);
  ASSERT_FALSE(whole.has_value());
  EXPECT_EQ(whole.error().code(), StatusCode::kResourceExhausted);
  for (size_t cut : {1, 2, 3}) EXPECT_FALSE(PeekFixedHeader(bytes.substr(0, cut))->has_value());
  auto fixed = PeekFixedHeader(bytes.substr(0, 12));
  ASSERT_TRUE(fixed.has_value() && fixed->has_value());
  EXPECT_EQ((*fixed)->total(), bytes.size());
  const std::string body = bytes.substr((*fixed)->header_size);
  EXPECT_FALSE(PeekPublishHead((*fixed)->first_byte, body.substr(0, 6))->has_value());
  auto head = PeekPublishHead((*fixed)->first_byte, body.substr(0, 9));
  ASSERT_TRUE(head.has_value() && head->has_value());
  EXPECT_EQ((*head)->topic, "t/big");
  EXPECT_EQ((*head)->packet_id, 42);
  EXPECT_EQ((*head)->qos, 1);
  EXPECT_FALSE(PeekPublishHead(0x36, body).has_value());  // QoS 3
  EXPECT_FALSE(PeekFixedHeader(Bytes({0x30, 0xff, 0xff, 0xff, 0xff, 0x01})).has_value());
}

}  // namespace
}  // namespace seedance::mqtt
