#include "mqtt/outbound.h"

#include <fmt/format.h>

#include <algorithm>

namespace seedance::mqtt {

OutboundSession::OutboundSession(uint32_t max_in_flight)
    : max_in_flight_(std::clamp<uint32_t>(max_in_flight, 1, 65535)) {}

void OutboundSession::Enqueue(Publish message, uint64_t tag) {
  message.dup = false;
  message.packet_id = 0;
  queue_.push_back(Message{std::move(message), tag, Stage::kAwaitAck});
}

void OutboundSession::Connected(bool session_present, uint32_t broker_receive_maximum,
                                std::vector<ToSend>* send, std::vector<Completion>* done) {
  connected_ = true;
  quota_ = std::min(max_in_flight_, broker_receive_maximum == 0 ? 65535u : broker_receive_maximum);
  const auto now = std::chrono::steady_clock::now();
  std::deque<uint16_t> order;
  order.swap(order_);
  for (uint16_t id : order) {
    auto it = flight_.find(id);
    if (it == flight_.end()) continue;  // finished since
    Message& m = it->second;
    m.sent_at = now;
    if (m.stage == Stage::kAwaitComp) {
      if (!session_present) {  // the broker took it (PUBREC) and forgot the exchange
        done->push_back(Completion{m.tag, 0, {}});
        flight_.erase(it);
        continue;
      }
      send->push_back(ToSend{.pubrel_id = id});
    } else {
      m.publish.dup = session_present;
      send->push_back(ToSend{.publish = &m.publish});
    }
    order_.push_back(id);
  }
  Pump(send, done);
}

void OutboundSession::Pump(std::vector<ToSend>* send, std::vector<Completion>* done) {
  if (!connected_) return;
  qos0_sent_.clear();  // the caller sent them after the previous call
  while (!queue_.empty()) {
    Message& front = queue_.front();
    if (front.publish.qos == 0) {
      // Complete once handed over: the caller sends it before the next call.
      qos0_sent_.push_back(std::move(front.publish));
      send->push_back(ToSend{.publish = &qos0_sent_.back()});
      done->push_back(Completion{front.tag, 0, {}});
      queue_.pop_front();
      continue;
    }
    if (flight_.size() >= quota_) return;
    const uint16_t id = NextFreeId();
    front.publish.packet_id = id;
    front.stage = front.publish.qos == 1 ? Stage::kAwaitAck : Stage::kAwaitRec;
    front.sent_at = std::chrono::steady_clock::now();
    auto [it, inserted] = flight_.emplace(id, std::move(front));
    queue_.pop_front();
    order_.push_back(id);
    send->push_back(ToSend{.publish = &it->second.publish});
  }
}

namespace {

const char* Expected(bool qos1, bool acknowledged) {
  if (qos1) return "PUBACK";
  return acknowledged ? "PUBCOMP" : "PUBREC";
}

}  // namespace

OutboundSession::Answer OutboundSession::OnResponse(const PubResponse& r, std::vector<ToSend>* send,
                                                    std::vector<Completion>* done,
                                                    std::string* error) {
  auto it = flight_.find(r.packet_id);
  if (it == flight_.end()) return Answer::kNotInFlight;
  Message& m = it->second;
  auto wrong = [&] {
    if (error) {
      *error = fmt::format("broker sent {} for packet id {}, a QoS {} message ({} expected)",
                           PacketTypeName(r.type), r.packet_id, m.publish.qos,
                           Expected(m.stage == Stage::kAwaitAck, m.stage == Stage::kAwaitComp));
    }
    return Answer::kProtocolError;
  };
  switch (r.type) {
    case PacketType::kPuback:
      if (m.stage != Stage::kAwaitAck) return wrong();
      break;
    case PacketType::kPubrec:
      if (m.stage == Stage::kAwaitComp) {  // a repeat: PUBREL again
        m.sent_at = std::chrono::steady_clock::now();
        send->push_back(ToSend{.pubrel_id = r.packet_id});
        return Answer::kTaken;
      }
      if (m.stage != Stage::kAwaitRec) return wrong();
      if (r.reason < 0x80) {
        m.stage = Stage::kAwaitComp;
        m.sent_at = std::chrono::steady_clock::now();
        m.publish.payload = std::string();  // never sent again
        send->push_back(ToSend{.pubrel_id = r.packet_id});
        return Answer::kTaken;
      }
      break;  // refused: complete now
    case PacketType::kPubcomp:
      if (m.stage != Stage::kAwaitComp) return wrong();
      break;
    default:
      return wrong();
  }
  done->push_back(
      Completion{m.tag, r.type == PacketType::kPubcomp ? uint8_t{0} : r.reason, ReasonString(r)});
  flight_.erase(it);
  if (order_.size() > 2 * flight_.size() + 64) {  // drop finished ids now and then
    std::erase_if(order_, [this](uint16_t id) { return !flight_.contains(id); });
  }
  Pump(send, done);
  return Answer::kTaken;
}

std::optional<OutboundSession::Waiting> OutboundSession::OldestUnanswered() const {
  // A scan: called about once a second, over at most max_in_flight messages.
  std::optional<Waiting> oldest;
  for (const auto& [id, m] : flight_) {
    if (!oldest || m.sent_at < oldest->since) oldest = Waiting{id, m.sent_at};
  }
  return oldest;
}

void OutboundSession::Cancel(uint64_t first_tag, uint64_t last_tag) {
  std::erase_if(queue_, [&](const Message& m) { return m.tag >= first_tag && m.tag <= last_tag; });
}

uint16_t OutboundSession::ReserveId() {
  const uint16_t id = NextFreeId();
  reserved_[id] = true;
  return id;
}

uint16_t OutboundSession::NextFreeId() {
  // At most 65,535 in flight (the quota) plus a reserved few: a free id exists.
  while (next_id_ == 0 || flight_.contains(next_id_) || reserved_.contains(next_id_)) ++next_id_;
  return next_id_++;
}

std::string OutboundSession::ReasonString(const PubResponse& r) {
  const Property* p = FindProperty(r.props, prop::kReasonString);
  return p ? p->text.substr(0, 256) : std::string();
}

}  // namespace seedance::mqtt
