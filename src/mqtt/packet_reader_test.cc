#include "mqtt/packet_reader.h"

#include <gtest/gtest.h>

#include "mqtt/codec.h"

namespace seedance::mqtt {
namespace {

std::string Encoded(const Packet& p, Version v = Version::kV311) {
  std::string out;
  Status s = Encode(p, v, out);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

Publish Message(std::string topic, std::string payload, uint16_t id = 7) {
  return Publish{
      .topic = std::move(topic), .payload = std::move(payload), .qos = 1, .packet_id = id};
}

void Feed(PacketReader& r, const std::string& bytes) { r.Append(bytes.data(), bytes.size()); }

TEST(PacketReaderTest, TakesAPacketCutAcrossReadsOnlyWhenWhole) {
  PacketReader r(Version::kV311, 1024);
  const std::string publish = Encoded(Message("a/b", "hello"));
  const std::string bytes = publish + Encoded(PingResp{});
  for (size_t i = 0; i + 1 < publish.size(); ++i) {  // all of the PUBLISH but its last byte
    r.Append(&bytes[i], 1);
    Result<bool> taken = r.Next();
    ASSERT_TRUE(taken.has_value());
    ASSERT_FALSE(*taken) << "taken at byte " << i;
  }
  Feed(r, bytes.substr(publish.size() - 1));
  Result<bool> taken = r.Next();
  ASSERT_TRUE(taken.has_value() && *taken);
  EXPECT_EQ(std::get<Publish>(r.packet()), Message("a/b", "hello"));
  EXPECT_EQ(r.invalid(), "");
  taken = r.Next();
  ASSERT_TRUE(taken.has_value() && *taken);
  EXPECT_TRUE(std::holds_alternative<PingResp>(r.packet()));
  EXPECT_EQ(r.buffered(), 0u);
  taken = r.Next();
  ASSERT_TRUE(taken.has_value());
  EXPECT_FALSE(*taken);
}

TEST(PacketReaderTest, AnOversizedPublishIsTakenByItsHeadAndTheRestSkippedAsItArrives) {
  PacketReader r(Version::kV311, 64);
  const std::string big = Encoded(Message("big/one", std::string(10000, 'x'), 9));
  const std::string next = Encoded(Message("small", "ok", 10));
  Feed(r, big.substr(0, 100));
  Result<bool> taken = r.Next();
  ASSERT_TRUE(taken.has_value() && *taken);
  const Publish& head = std::get<Publish>(r.packet());
  EXPECT_EQ(head.topic, "big/one");
  EXPECT_EQ(head.packet_id, 9);  // so the client can acknowledge it
  EXPECT_EQ(head.payload, "");
  EXPECT_NE(r.invalid().find("exceeds max_packet_size (64 bytes)"), std::string::npos)
      << r.invalid();
  EXPECT_EQ(r.skipping(), big.size() - 100);
  // The rest arrives in pieces with the next packet behind it: never buffered.
  for (size_t at = 100; at < big.size(); at += 1000) {
    Feed(r, big.substr(at, 1000));
    EXPECT_EQ(r.buffered(), 0u);
  }
  EXPECT_EQ(r.skipping(), 0u);
  Feed(r, next);
  taken = r.Next();
  ASSERT_TRUE(taken.has_value() && *taken);
  EXPECT_EQ(std::get<Publish>(r.packet()), Message("small", "ok", 10));
  EXPECT_EQ(r.invalid(), "");
}

TEST(PacketReaderTest, ResetForgetsASkipInProgress) {
  // Regression: the skip of an oversized PUBLISH used to survive a reconnect and eat the
  // first bytes of the next connection (its CONNACK).
  PacketReader r(Version::kV311, 64);
  const std::string big = Encoded(Message("big", std::string(5000, 'x')));
  Feed(r, big.substr(0, 50));
  ASSERT_TRUE(r.Next().value());
  ASSERT_GT(r.skipping(), 0u);
  r.Reset();
  EXPECT_EQ(r.skipping(), 0u);
  Feed(r, Encoded(Connack{}));
  Result<bool> taken = r.Next();
  ASSERT_TRUE(taken.has_value() && *taken);
  EXPECT_TRUE(std::holds_alternative<Connack>(r.packet()));
}

TEST(PacketReaderTest, APublishThatCannotBeTakenSaysWhyAndKeepsItsIdentity) {
  PacketReader r(Version::kV5, 1024);
  Feed(r, Encoded(Message("a/+/b", "payload", 3), Version::kV5));
  Feed(r, Encoded(Message(std::string("a\0b", 3), "payload", 4), Version::kV5));
  Publish alias = Message("", "payload", 5);
  alias.props = {{.id = prop::kTopicAlias, .number = 1}};
  Feed(r, Encoded(alias, Version::kV5));
  Feed(r, Encoded(Message("fine", "payload", 6), Version::kV5));

  ASSERT_TRUE(r.Next().value());
  EXPECT_EQ(std::get<Publish>(r.packet()).packet_id, 3);
  EXPECT_EQ(std::get<Publish>(r.packet()).payload, "");
  EXPECT_NE(r.invalid().find("wildcard"), std::string::npos) << r.invalid();
  ASSERT_TRUE(r.Next().value());
  EXPECT_EQ(std::get<Publish>(r.packet()).packet_id, 4);
  EXPECT_NE(r.invalid().find("U+0000"), std::string::npos) << r.invalid();
  ASSERT_TRUE(r.Next().value());
  EXPECT_EQ(std::get<Publish>(r.packet()).packet_id, 5);
  EXPECT_NE(r.invalid().find("topic alias"), std::string::npos) << r.invalid();
  ASSERT_TRUE(r.Next().value());
  EXPECT_EQ(std::get<Publish>(r.packet()), Message("fine", "payload", 6));
  EXPECT_EQ(r.invalid(), "");
}

TEST(PacketReaderTest, BytesThatAreNotMqttAreAnError) {
  PacketReader r(Version::kV311, 1024);
  Feed(r, std::string("\x30\xff\xff\xff\xff\x01", 6));  // a length of five bytes
  EXPECT_FALSE(r.Next().has_value());
  PacketReader large(Version::kV311, 64);
  Feed(large, Encoded(Suback{.packet_id = 1, .reasons = std::vector<uint8_t>(100, 0)}));
  Result<bool> taken = large.Next();  // only a PUBLISH may exceed the limit and be skipped
  ASSERT_FALSE(taken.has_value());
  EXPECT_EQ(taken.error().code(), StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace seedance::mqtt
