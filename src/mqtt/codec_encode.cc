// The encoding half of the MQTT codec (codec.h): Packet -> bytes.
#include "mqtt/codec.h"
#include "mqtt/wire.h"

namespace seedance::mqtt {

using namespace wire;  // NOLINT(build/namespaces): the codec's own primitives

namespace {

// Encodes the variable header and payload of `packet` into `body`; sets the first byte.
Status EncodeBody(const Packet& packet, Version v, uint8_t* first, std::string& body) {
  Writer w(body);
  const bool v5 = v == Version::kV5;
  struct Visitor {
    Writer& w;
    bool v5;
    uint8_t* first;
    Status operator()(const Connect& c) {
      *first = 0x10;
      w.Str("MQTT");
      w.U8(static_cast<uint8_t>(c.version));
      uint8_t flags = 0;
      if (c.username) flags |= 0x80;
      if (c.password) flags |= 0x40;
      if (c.will) {
        flags |= 0x04 | static_cast<uint8_t>((c.will->qos & 3) << 3);
        if (c.will->retain) flags |= 0x20;
      }
      if (c.clean_start) flags |= 0x02;
      w.U8(flags);
      w.U16(c.keep_alive_s);
      if (v5) w.Props(c.props);
      w.Str(c.client_id);
      if (c.will) {
        if (v5) w.Props(c.will->props);
        w.Str(c.will->topic);
        w.Str(c.will->payload);
      }
      if (c.username) w.Str(*c.username);
      if (c.password) w.Str(*c.password);
      return Status::Ok();
    }
    Status operator()(const Connack& c) {
      *first = 0x20;
      w.U8(c.session_present ? 1 : 0);
      w.U8(c.reason);
      if (v5) w.Props(c.props);
      return Status::Ok();
    }
    Status operator()(const Publish& p) {
      if (p.qos > 2) return InvalidArgumentError("PUBLISH QoS must be 0, 1 or 2");
      if (p.qos > 0 && p.packet_id == 0) {
        return InvalidArgumentError("PUBLISH with QoS > 0 needs a packet id");
      }
      *first = static_cast<uint8_t>(0x30 | (p.dup ? 0x08 : 0) | (p.qos << 1) | (p.retain ? 1 : 0));
      w.Str(p.topic);
      if (p.qos > 0) w.U16(p.packet_id);
      if (v5) w.Props(p.props);
      w.Raw(p.payload);
      return Status::Ok();
    }
    Status operator()(const PubResponse& r) {
      uint8_t t = static_cast<uint8_t>(r.type);
      if (t < 4 || t > 7) return InvalidArgumentError("PubResponse type must be PUBACK..PUBCOMP");
      *first = static_cast<uint8_t>((t << 4) | (r.type == PacketType::kPubrel ? 0x02 : 0));
      w.U16(r.packet_id);
      if (v5 && (r.reason != 0 || !r.props.empty())) {
        w.U8(r.reason);
        if (!r.props.empty()) w.Props(r.props);
      }
      return Status::Ok();
    }
    Status operator()(const Subscribe& s) {
      if (s.subscriptions.empty()) return InvalidArgumentError("SUBSCRIBE needs a filter");
      *first = 0x82;
      w.U16(s.packet_id);
      if (v5) w.Props(s.props);
      for (const auto& sub : s.subscriptions) {
        w.Str(sub.filter);
        w.U8(v5 ? sub.options : static_cast<uint8_t>(sub.options & 3));
      }
      return Status::Ok();
    }
    Status operator()(const Suback& s) {
      *first = 0x90;
      w.U16(s.packet_id);
      if (v5) w.Props(s.props);
      for (uint8_t r : s.reasons) w.U8(r);
      return Status::Ok();
    }
    Status operator()(const Unsubscribe& u) {
      if (u.filters.empty()) return InvalidArgumentError("UNSUBSCRIBE needs a filter");
      *first = 0xA2;
      w.U16(u.packet_id);
      if (v5) w.Props(u.props);
      for (const auto& f : u.filters) w.Str(f);
      return Status::Ok();
    }
    Status operator()(const Unsuback& u) {
      *first = 0xB0;
      w.U16(u.packet_id);
      if (v5) {
        w.Props(u.props);
        for (uint8_t r : u.reasons) w.U8(r);
      }
      return Status::Ok();
    }
    Status operator()(const PingReq&) {
      *first = 0xC0;
      return Status::Ok();
    }
    Status operator()(const PingResp&) {
      *first = 0xD0;
      return Status::Ok();
    }
    Status operator()(const Disconnect& d) {
      *first = 0xE0;
      if (v5 && (d.reason != 0 || !d.props.empty())) {
        w.U8(d.reason);
        w.Props(d.props);
      }
      return Status::Ok();
    }
    Status operator()(const Auth& a) {
      if (!v5) return InvalidArgumentError("AUTH exists only in MQTT 5");
      *first = 0xF0;
      w.U8(a.reason);
      w.Props(a.props);
      return Status::Ok();
    }
  };
  Status s = std::visit(Visitor{w, v5, first}, packet);
  if (!s.ok()) return s;
  if (!w.ok()) return InvalidArgumentError("a string, binary field or property is too long");
  return Status::Ok();
}

}  // namespace

const Property* FindProperty(const Properties& props, uint8_t id) {
  for (const Property& p : props) {
    if (p.id == id) return &p;
  }
  return nullptr;
}

const char* PacketTypeName(PacketType type) {
  static const char* const kNames[] = {"RESERVED",  "CONNECT",  "CONNACK",     "PUBLISH",
                                       "PUBACK",    "PUBREC",   "PUBREL",      "PUBCOMP",
                                       "SUBSCRIBE", "SUBACK",   "UNSUBSCRIBE", "UNSUBACK",
                                       "PINGREQ",   "PINGRESP", "DISCONNECT",  "AUTH"};
  auto i = static_cast<uint8_t>(type);
  return i < 16 ? kNames[i] : "?";
}

PacketType TypeOf(const Packet& packet) {
  struct V {
    PacketType operator()(const Connect&) { return PacketType::kConnect; }
    PacketType operator()(const Connack&) { return PacketType::kConnack; }
    PacketType operator()(const Publish&) { return PacketType::kPublish; }
    PacketType operator()(const PubResponse& r) { return r.type; }
    PacketType operator()(const Subscribe&) { return PacketType::kSubscribe; }
    PacketType operator()(const Suback&) { return PacketType::kSuback; }
    PacketType operator()(const Unsubscribe&) { return PacketType::kUnsubscribe; }
    PacketType operator()(const Unsuback&) { return PacketType::kUnsuback; }
    PacketType operator()(const PingReq&) { return PacketType::kPingreq; }
    PacketType operator()(const PingResp&) { return PacketType::kPingresp; }
    PacketType operator()(const Disconnect&) { return PacketType::kDisconnect; }
    PacketType operator()(const Auth&) { return PacketType::kAuth; }
  };
  return std::visit(V{}, packet);
}

Status Encode(const Packet& packet, Version version, std::string& out) {
  std::string body;
  uint8_t first = 0;
  SEEDANCE_RETURN_IF_ERROR(EncodeBody(packet, version, &first, body));
  if (body.size() > kMaxRemaining) return InvalidArgumentError("packet larger than 256 MiB");
  PutU8(out, first);
  PutVarint(out, static_cast<uint32_t>(body.size()));
  out += body;
  return Status::Ok();
}

Status EncodePublish(const Publish& p, Version version, std::string& out) {
  if (p.qos > 2) return InvalidArgumentError("PUBLISH QoS must be 0, 1 or 2");
  if (p.qos > 0 && p.packet_id == 0) {
    return InvalidArgumentError("PUBLISH with QoS > 0 needs a packet id");
  }
  std::string head;  // topic, packet id and properties; the payload is appended once
  Writer w(head);
  w.Str(p.topic);
  if (p.qos > 0) w.U16(p.packet_id);
  if (version == Version::kV5) w.Props(p.props);
  if (!w.ok()) return InvalidArgumentError("a string, binary field or property is too long");
  const size_t remaining = head.size() + p.payload.size();
  if (remaining > kMaxRemaining) return InvalidArgumentError("packet larger than 256 MiB");
  PutU8(out, static_cast<uint8_t>(0x30 | (p.dup ? 0x08 : 0) | (p.qos << 1) | (p.retain ? 1 : 0)));
  PutVarint(out, static_cast<uint32_t>(remaining));
  out += head;
  out += p.payload;
  return Status::Ok();
}

}  // namespace seedance::mqtt
