// OutboundSession: the publishing side of an MQTT session (MQTT 3.1.1 §4.3, 5.0 §4.3, §4.9),
// as state without I/O; the Client sends what it returns.
//
// A message is queued, then in flight once it has a packet id, then complete:
//  - QoS 0: complete as soon as it is handed to the connection (at most once);
//  - QoS 1: complete on PUBACK;
//  - QoS 2: PUBLISH → PUBREC → PUBREL → PUBCOMP; complete on PUBCOMP. A PUBREC with a reason
//    ≥ 0x80 (MQTT 5) completes it at once as refused.
// A completion carries the reason code: ≥ 0x80 means the broker refused the message (MQTT 5,
// e.g. 0x87 not authorized); 0x10 "no matching subscribers" is a success.
//
// Flow control: at most `quota` messages in flight — the broker's Receive Maximum (MQTT 5
// CONNACK; 65,535 when it sends none) capped by the client's own limit. The rest wait in the
// queue, in order.
//
// Reconnects: with the session resumed, every message in flight is sent again first, in the
// order it was first sent — PUBLISH with DUP set, or PUBREL for a QoS 2 message the broker
// already acknowledged with PUBREC. With a new session the broker has forgotten them: QoS 2
// messages it had PUBREC'd are complete (it took them), the others are sent again as new.
//
// Answers: a response for a message in the wrong stage (a PUBREC for QoS 1, a PUBACK for QoS
// 2) is a protocol error the client ends the connection for; one for an id not in flight is
// ignored (a repeat, or the broker's mistake) and reported. A message whose answer does not
// come (OldestUnanswered) is the client's to time out: only a new connection sends it again.
//
// Cancel(first, last) drops the queued messages with tags in [first, last]; the ones in flight must
// finish their exchange (the packet id stays taken until then) and still report a completion.
//
// Not thread-safe: the Client's io thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "mqtt/packet.h"

namespace seedance::mqtt {

class OutboundSession {
 public:
  struct Completion {
    uint64_t tag = 0;
    uint8_t reason = 0;       // the broker's reason code; ≥ 0x80: refused
    std::string reason_text;  // MQTT 5 reason string, if any
  };
  // What to write to the connection, in order: either a PUBLISH (`publish` points into the
  // session, valid until the next call) or a PUBREL for `pubrel_id`.
  struct ToSend {
    const Publish* publish = nullptr;
    uint16_t pubrel_id = 0;
  };

  explicit OutboundSession(uint32_t max_in_flight = 65535);

  void Enqueue(Publish message, uint64_t tag);
  // A connection was accepted: fills `send` with what to send again and `done` with messages
  // a new session completed, and sets the quota.
  void Connected(bool session_present, uint32_t broker_receive_maximum, std::vector<ToSend>* send,
                 std::vector<Completion>* done);
  // Moves queued messages into flight while the quota allows (connected only).
  void Pump(std::vector<ToSend>* send, std::vector<Completion>* done);
  enum class Answer {
    kTaken,          // it moved its message on
    kNotInFlight,    // no message in flight has its id: ignored
    kProtocolError,  // the wrong packet for its message's stage; `error` says which
  };
  // A PUBACK, PUBREC or PUBCOMP.
  Answer OnResponse(const PubResponse& response, std::vector<ToSend>* send,
                    std::vector<Completion>* done, std::string* error = nullptr);
  // The message in flight that has waited longest for its answer on this connection (since
  // its PUBLISH or PUBREL was handed out): its packet id and when. None when nothing waits.
  struct Waiting {
    uint16_t packet_id = 0;
    std::chrono::steady_clock::time_point since;
  };
  std::optional<Waiting> OldestUnanswered() const;
  void Disconnected() { connected_ = false; }
  void Cancel(uint64_t first_tag, uint64_t last_tag);

  // A packet id for another packet (SUBSCRIBE) that no message uses; Release it when done.
  uint16_t ReserveId();
  void ReleaseId(uint16_t id) { reserved_.erase(id); }

  size_t queued() const { return queue_.size(); }
  size_t in_flight() const { return flight_.size(); }

 private:
  enum class Stage { kAwaitAck, kAwaitRec, kAwaitComp };
  struct Message {
    Publish publish;
    uint64_t tag = 0;
    Stage stage = Stage::kAwaitAck;
    std::chrono::steady_clock::time_point sent_at;  // its PUBLISH or PUBREL, last handed out
  };

  uint16_t NextFreeId();
  static std::string ReasonString(const PubResponse& r);

  const uint32_t max_in_flight_;
  uint32_t quota_ = 0;
  bool connected_ = false;
  std::deque<Message> queue_;
  std::unordered_map<uint16_t, Message> flight_;
  std::deque<uint16_t> order_;     // ids in the order first sent (may hold finished ids)
  std::deque<Publish> qos0_sent_;  // QoS 0 messages handed out by the last Pump()
  std::unordered_map<uint16_t, bool> reserved_;
  uint16_t next_id_ = 1;
};

}  // namespace seedance::mqtt
