#include "mqtt/outbound.h"

#include <gtest/gtest.h>

namespace seedance::mqtt {
namespace {

using Sends = std::vector<OutboundSession::ToSend>;
using Dones = std::vector<OutboundSession::Completion>;
using Answer = OutboundSession::Answer;

Publish Msg(std::string topic, uint8_t qos) {
  return Publish{.topic = std::move(topic), .payload = "p", .qos = qos};
}

PubResponse Resp(PacketType type, uint16_t id, uint8_t reason = 0) {
  return PubResponse{.type = type, .packet_id = id, .reason = reason};
}

TEST(OutboundSessionTest, Qos1CompletesOnPubackAndQos0WhenHandedOver) {
  OutboundSession s;
  Sends send;
  Dones done;
  s.Connected(false, 0, &send, &done);
  EXPECT_TRUE(send.empty());
  s.Enqueue(Msg("a", 1), 7);
  s.Enqueue(Msg("b", 0), 8);
  s.Pump(&send, &done);
  ASSERT_EQ(send.size(), 2u);
  const uint16_t id = send[0].publish->packet_id;
  EXPECT_NE(id, 0);
  EXPECT_EQ(send[1].publish->qos, 0);
  ASSERT_EQ(done.size(), 1u);  // the QoS 0 one
  EXPECT_EQ(done[0].tag, 8u);
  send.clear();
  done.clear();
  // An id not in flight: ignored.
  EXPECT_EQ(s.OnResponse(Resp(PacketType::kPuback, id + 1), &send, &done), Answer::kNotInFlight);
  EXPECT_EQ(s.OnResponse(Resp(PacketType::kPuback, id, 0x10), &send, &done), Answer::kTaken);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].tag, 7u);
  EXPECT_EQ(done[0].reason, 0x10);  // no matching subscribers: a success
  EXPECT_EQ(s.in_flight(), 0u);
}

TEST(OutboundSessionTest, Qos2RunsTheFourStepExchangeAndARefusedPubrecEndsIt) {
  OutboundSession s;
  Sends send;
  Dones done;
  s.Connected(true, 0, &send, &done);
  s.Enqueue(Msg("a", 2), 1);
  s.Enqueue(Msg("b", 2), 2);
  s.Pump(&send, &done);
  ASSERT_EQ(send.size(), 2u);
  const uint16_t a = send[0].publish->packet_id, b = send[1].publish->packet_id;
  send.clear();
  EXPECT_EQ(s.OnResponse(Resp(PacketType::kPubcomp, a), &send, &done),
            Answer::kProtocolError);  // before PUBREC
  EXPECT_EQ(s.OnResponse(Resp(PacketType::kPubrec, a), &send, &done), Answer::kTaken);
  ASSERT_EQ(send.size(), 1u);
  EXPECT_EQ(send[0].pubrel_id, a);
  EXPECT_TRUE(done.empty());
  EXPECT_EQ(s.OnResponse(Resp(PacketType::kPubcomp, a), &send, &done), Answer::kTaken);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].reason, 0);
  EXPECT_EQ(s.OnResponse(Resp(PacketType::kPubrec, b, 0x87), &send, &done), Answer::kTaken);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[1].tag, 2u);
  EXPECT_EQ(done[1].reason, 0x87);
}

TEST(OutboundSessionTest, TheBrokersReceiveMaximumBoundsWhatIsInFlight) {
  OutboundSession s(100);
  Sends send;
  Dones done;
  s.Connected(false, 3, &send, &done);
  for (int i = 0; i < 10; ++i) s.Enqueue(Msg("t", 1), static_cast<uint64_t>(i));
  s.Pump(&send, &done);
  EXPECT_EQ(send.size(), 3u);
  EXPECT_EQ(s.queued(), 7u);
  const uint16_t first = send[0].publish->packet_id;
  send.clear();
  EXPECT_EQ(s.OnResponse(Resp(PacketType::kPuback, first), &send, &done), Answer::kTaken);
  EXPECT_EQ(send.size(), 1u);  // one completed, one more goes
  EXPECT_EQ(s.in_flight(), 3u);
  // Our own limit caps a broker's larger one.
  OutboundSession capped(2);
  capped.Connected(false, 1000, &send, &done);
  for (int i = 0; i < 5; ++i) capped.Enqueue(Msg("t", 1), 0);
  send.clear();
  capped.Pump(&send, &done);
  EXPECT_EQ(send.size(), 2u);
}

TEST(OutboundSessionTest, AResumedSessionResendsInOrderWithDupAndPubrel) {
  OutboundSession s;
  Sends send;
  Dones done;
  s.Connected(false, 0, &send, &done);
  s.Enqueue(Msg("one", 1), 1);
  s.Enqueue(Msg("two", 2), 2);
  s.Enqueue(Msg("three", 2), 3);
  s.Pump(&send, &done);
  const uint16_t two = send[1].publish->packet_id;
  send.clear();
  ASSERT_EQ(s.OnResponse(Resp(PacketType::kPubrec, two), &send, &done),
            Answer::kTaken);  // two awaits PUBCOMP
  s.Disconnected();
  s.Enqueue(Msg("four", 1), 4);
  send.clear();
  s.Pump(&send, &done);
  EXPECT_TRUE(send.empty());  // not while disconnected
  s.Connected(true, 0, &send, &done);
  ASSERT_EQ(send.size(), 4u);
  EXPECT_EQ(send[0].publish->topic, "one");
  EXPECT_TRUE(send[0].publish->dup);
  EXPECT_EQ(send[1].publish, nullptr);
  EXPECT_EQ(send[1].pubrel_id, two);
  EXPECT_EQ(send[2].publish->topic, "three");
  EXPECT_TRUE(send[2].publish->dup);
  EXPECT_EQ(send[3].publish->topic, "four");
  EXPECT_FALSE(send[3].publish->dup);
  EXPECT_TRUE(done.empty());
}

TEST(OutboundSessionTest, ANewSessionCompletesWhatTheBrokerTookAndResendsTheRest) {
  OutboundSession s;
  Sends send;
  Dones done;
  s.Connected(false, 0, &send, &done);
  s.Enqueue(Msg("one", 1), 1);
  s.Enqueue(Msg("two", 2), 2);
  s.Pump(&send, &done);
  const uint16_t two = send[1].publish->packet_id;
  send.clear();
  ASSERT_EQ(s.OnResponse(Resp(PacketType::kPubrec, two), &send, &done), Answer::kTaken);
  s.Disconnected();
  send.clear();
  s.Connected(false, 0, &send, &done);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].tag, 2u);
  ASSERT_EQ(send.size(), 1u);
  EXPECT_EQ(send[0].publish->topic, "one");
  EXPECT_FALSE(send[0].publish->dup);
}

TEST(OutboundSessionTest, CancelDropsQueuedMessagesOnlyAndIdsAreNeverShared) {
  OutboundSession s;
  Sends send;
  Dones done;
  s.Connected(false, 1, &send, &done);
  s.Enqueue(Msg("a", 1), 5);
  s.Enqueue(Msg("b", 1), 5);
  s.Enqueue(Msg("c", 1), 6);
  s.Pump(&send, &done);
  ASSERT_EQ(send.size(), 1u);
  const uint16_t a = send[0].publish->packet_id;
  s.Cancel(5, 5);
  EXPECT_EQ(s.queued(), 1u);  // "c"
  const uint16_t reserved = s.ReserveId();
  EXPECT_NE(reserved, a);
  send.clear();
  ASSERT_EQ(s.OnResponse(Resp(PacketType::kPuback, a), &send, &done), Answer::kTaken);
  ASSERT_EQ(send.size(), 1u);
  EXPECT_EQ(send[0].publish->topic, "c");
  EXPECT_NE(send[0].publish->packet_id, reserved);
}

TEST(OutboundSessionTest, TheWrongAnswerForAStageIsAProtocolErrorThatNamesIt) {
  OutboundSession s;
  Sends send;
  Dones done;
  s.Connected(false, 0, &send, &done);
  s.Enqueue(Msg("a", 1), 1);
  s.Enqueue(Msg("b", 2), 2);
  s.Pump(&send, &done);
  ASSERT_EQ(send.size(), 2u);
  const uint16_t one = send[0].publish->packet_id, two = send[1].publish->packet_id;
  send.clear();
  std::string error;
  EXPECT_EQ(s.OnResponse(Resp(PacketType::kPubrec, one), &send, &done, &error),
            Answer::kProtocolError);
  EXPECT_EQ(error, "broker sent PUBREC for packet id " + std::to_string(one) +
                       ", a QoS 1 message (PUBACK expected)");
  EXPECT_EQ(s.OnResponse(Resp(PacketType::kPuback, two), &send, &done, &error),
            Answer::kProtocolError);
  EXPECT_NE(error.find("a QoS 2 message (PUBREC expected)"), std::string::npos) << error;
  EXPECT_TRUE(done.empty());
  EXPECT_EQ(s.in_flight(), 2u);  // nothing completed by a wrong answer
}

TEST(OutboundSessionTest, OldestUnansweredIsTheMessageThatWaitedLongest) {
  OutboundSession s;
  Sends send;
  Dones done;
  EXPECT_FALSE(s.OldestUnanswered().has_value());
  s.Connected(false, 0, &send, &done);
  s.Enqueue(Msg("a", 1), 1);
  s.Pump(&send, &done);
  const uint16_t first = send[0].publish->packet_id;
  const auto before_second = std::chrono::steady_clock::now();
  s.Enqueue(Msg("b", 1), 2);
  s.Pump(&send, &done);
  const uint16_t second = send[1].publish->packet_id;
  ASSERT_TRUE(s.OldestUnanswered().has_value());
  EXPECT_EQ(s.OldestUnanswered()->packet_id, first);
  EXPECT_LE(s.OldestUnanswered()->since, before_second);
  send.clear();
  ASSERT_EQ(s.OnResponse(Resp(PacketType::kPuback, first), &send, &done), Answer::kTaken);
  EXPECT_EQ(s.OldestUnanswered()->packet_id, second);
  // A reconnect sends it again: it waits from then.
  s.Disconnected();
  const auto before_reconnect = std::chrono::steady_clock::now();
  s.Connected(true, 0, &send, &done);
  EXPECT_GE(s.OldestUnanswered()->since, before_reconnect);
  ASSERT_EQ(s.OnResponse(Resp(PacketType::kPuback, second), &send, &done), Answer::kTaken);
  EXPECT_FALSE(s.OldestUnanswered().has_value());
}

}  // namespace
}  // namespace seedance::mqtt
