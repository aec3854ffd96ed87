// The decoding half of the MQTT codec (codec.h): bytes -> Packet, the input hostile.
#include "mqtt/codec.h"

#include "mqtt/wire.h"

namespace seedance::mqtt {

using namespace wire;  // NOLINT(build/namespaces): the codec's own primitives

Result<std::optional<FrameInfo>> PeekFixedHeader(std::string_view buffer) {
  if (buffer.size() < 2) return std::optional<FrameInfo>();
  FrameInfo f;
  f.first_byte = static_cast<uint8_t>(buffer[0]);
  size_t value = 0;
  for (size_t i = 0; i < 4; ++i) {
    if (1 + i >= buffer.size()) return std::optional<FrameInfo>();
    auto b = static_cast<uint8_t>(buffer[1 + i]);
    value |= static_cast<size_t>(b & 0x7F) << (7 * i);
    if ((b & 0x80) == 0) {
      f.header_size = 2 + i;
      f.remaining = value;
      return std::optional<FrameInfo>(f);
    }
  }
  return InvalidArgumentError("malformed remaining length");
}

Result<std::optional<FrameInfo>> PeekFrame(std::string_view buffer, size_t max_packet_size) {
  auto header = PeekFixedHeader(buffer);
  if (!header || !header->has_value()) return header;
  const FrameInfo& f = **header;
  if (f.total() > max_packet_size) {
    return ResourceExhaustedError(
        fmt::format("packet of {} bytes exceeds the maximum of {}", f.total(), max_packet_size));
  }
  if (buffer.size() < f.total()) return std::optional<FrameInfo>();
  return header;
}

Result<std::optional<PublishHead>> PeekPublishHead(uint8_t first_byte, std::string_view prefix) {
  PublishHead head;
  head.qos = (first_byte >> 1) & 3;
  if (head.qos == 3) return Malformed("PUBLISH (QoS 3)");
  if (prefix.size() < 2) return std::optional<PublishHead>();
  const size_t topic_len = (static_cast<uint8_t>(prefix[0]) << 8) | static_cast<uint8_t>(prefix[1]);
  const size_t need = 2 + topic_len + (head.qos > 0 ? 2 : 0);
  if (prefix.size() < need) return std::optional<PublishHead>();
  head.topic.assign(prefix.substr(2, topic_len));
  if (head.qos > 0) {
    head.packet_id = static_cast<uint16_t>((static_cast<uint8_t>(prefix[2 + topic_len]) << 8) |
                                           static_cast<uint8_t>(prefix[3 + topic_len]));
    if (head.packet_id == 0) return Malformed("PUBLISH (packet id 0)");
  }
  return std::optional<PublishHead>(std::move(head));
}

Status DecodePublishInto(uint8_t first_byte, std::string_view body, Version version, Publish* out) {
  const bool v5 = version == Version::kV5;
  const uint8_t flags = first_byte & 0x0F;
  Reader r(body);
  Publish& p = *out;
  p.dup = (flags & 0x08) != 0;
  p.qos = (flags >> 1) & 3;
  p.retain = (flags & 1) != 0;
  p.packet_id = 0;
  p.props.clear();
  if (p.qos == 3) return Malformed("PUBLISH (QoS 3)");
  p.topic.assign(r.StrView());
  if (p.qos > 0) {
    p.packet_id = r.U16();
    if (r.ok() && p.packet_id == 0) return Malformed("PUBLISH (packet id 0)");
  }
  if (v5) p.props = r.Props();
  if (!r.ok()) return Malformed("PUBLISH");
  if (HasWildcard(p.topic)) return Malformed("PUBLISH (wildcard in topic name)");
  if (p.topic.empty() && (!v5 || FindProperty(p.props, prop::kTopicAlias) == nullptr)) {
    return Malformed("PUBLISH (empty topic)");
  }
  p.payload.assign(r.RestView());
  return Status::Ok();
}

Result<Packet> Decode(uint8_t first_byte, std::string_view body, Version version) {
  const bool v5 = version == Version::kV5;
  const auto type = static_cast<PacketType>(first_byte >> 4);
  const uint8_t flags = first_byte & 0x0F;
  Reader r(body);
  auto fixed_flags = [&](uint8_t expected) { return flags == expected; };
  switch (type) {
    case PacketType::kConnect: {
      if (!fixed_flags(0)) return Malformed("CONNECT");
      Connect c;
      if (r.Str() != "MQTT") return Malformed("CONNECT (protocol name)");
      uint8_t level = r.U8();
      if (level != 4 && level != 5) return Malformed("CONNECT (protocol level)");
      c.version = static_cast<Version>(level);
      const bool cv5 = level == 5;
      uint8_t f = r.U8();
      if (f & 0x01) return Malformed("CONNECT (reserved flag)");
      c.clean_start = (f & 0x02) != 0;
      c.keep_alive_s = r.U16();
      if (cv5) c.props = r.Props();
      c.client_id = r.Str();
      if (f & 0x04) {
        Will will;
        will.qos = (f >> 3) & 3;
        will.retain = (f & 0x20) != 0;
        if (will.qos == 3) return Malformed("CONNECT (will QoS)");
        if (cv5) will.props = r.Props();
        will.topic = r.Str();
        will.payload = r.Str();
        c.will = std::move(will);
      } else if (f & 0x38) {
        return Malformed("CONNECT (will flags without will)");
      }
      if (f & 0x80) c.username = r.Str();
      if (f & 0x40) c.password = r.Str();
      if (!r.ok() || !r.empty()) return Malformed("CONNECT");
      return Packet(std::move(c));
    }
    case PacketType::kConnack: {
      if (!fixed_flags(0)) return Malformed("CONNACK");
      Connack c;
      uint8_t f = r.U8();
      if (f & 0xFE) return Malformed("CONNACK (flags)");
      c.session_present = f & 1;
      c.reason = r.U8();
      if (v5) c.props = r.Props();
      if (!r.ok() || !r.empty()) return Malformed("CONNACK");
      return Packet(std::move(c));
    }
    case PacketType::kPublish: {
      Publish p;
      Status s = DecodePublishInto(first_byte, body, version, &p);
      if (!s.ok()) return s;
      return Packet(std::move(p));
    }
    case PacketType::kPuback:
    case PacketType::kPubrec:
    case PacketType::kPubrel:
    case PacketType::kPubcomp: {
      if (!fixed_flags(type == PacketType::kPubrel ? 0x02 : 0))
        return Malformed(PacketTypeName(type));
      PubResponse p;
      p.type = type;
      p.packet_id = r.U16();
      if (v5 && !r.empty()) {
        p.reason = r.U8();
        if (!r.empty()) p.props = r.Props();
      }
      if (!r.ok() || !r.empty()) return Malformed(PacketTypeName(type));
      return Packet(std::move(p));
    }
    case PacketType::kSubscribe: {
      if (!fixed_flags(0x02)) return Malformed("SUBSCRIBE");
      Subscribe s;
      s.packet_id = r.U16();
      if (v5) s.props = r.Props();
      while (r.ok() && !r.empty()) {
        Subscription sub;
        sub.filter = r.Str();
        sub.options = r.U8();
        if (!v5 && (sub.options & 0xFC)) return Malformed("SUBSCRIBE (options)");
        if ((sub.options & 3) == 3 || (sub.options & 0xC0)) return Malformed("SUBSCRIBE (options)");
        s.subscriptions.push_back(std::move(sub));
      }
      if (!r.ok() || s.subscriptions.empty()) return Malformed("SUBSCRIBE");
      return Packet(std::move(s));
    }
    case PacketType::kSuback: {
      if (!fixed_flags(0)) return Malformed("SUBACK");
      Suback s;
      s.packet_id = r.U16();
      if (v5) s.props = r.Props();
      while (r.ok() && !r.empty()) s.reasons.push_back(r.U8());
      if (!r.ok() || s.reasons.empty()) return Malformed("SUBACK");
      return Packet(std::move(s));
    }
    case PacketType::kUnsubscribe: {
      if (!fixed_flags(0x02)) return Malformed("UNSUBSCRIBE");
      Unsubscribe u;
      u.packet_id = r.U16();
      if (v5) u.props = r.Props();
      while (r.ok() && !r.empty()) u.filters.push_back(r.Str());
      if (!r.ok() || u.filters.empty()) return Malformed("UNSUBSCRIBE");
      return Packet(std::move(u));
    }
    case PacketType::kUnsuback: {
      if (!fixed_flags(0)) return Malformed("UNSUBACK");
      Unsuback u;
      u.packet_id = r.U16();
      if (v5) {
        u.props = r.Props();
        while (r.ok() && !r.empty()) u.reasons.push_back(r.U8());
      }
      if (!r.ok() || !r.empty()) return Malformed("UNSUBACK");
      return Packet(std::move(u));
    }
    case PacketType::kPingreq:
      if (!fixed_flags(0) || !body.empty()) return Malformed("PINGREQ");
      return Packet(PingReq{});
    case PacketType::kPingresp:
      if (!fixed_flags(0) || !body.empty()) return Malformed("PINGRESP");
      return Packet(PingResp{});
    case PacketType::kDisconnect: {
      if (!fixed_flags(0)) return Malformed("DISCONNECT");
      Disconnect d;
      if (v5 && !r.empty()) {
        d.reason = r.U8();
        if (!r.empty()) d.props = r.Props();
      }
      if (!r.ok() || !r.empty()) return Malformed("DISCONNECT");
      return Packet(std::move(d));
    }
    case PacketType::kAuth: {
      if (!v5 || !fixed_flags(0)) return Malformed("AUTH");
      Auth a;
      if (!r.empty()) {
        a.reason = r.U8();
        if (!r.empty()) a.props = r.Props();
      }
      if (!r.ok() || !r.empty()) return Malformed("AUTH");
      return Packet(std::move(a));
    }
  }
  return InvalidArgumentError("reserved packet type 0");
}

Result<Packet> DecodeWhole(std::string_view bytes, Version version) {
  auto frame = PeekFrame(bytes, kMaxRemaining + 5);
  if (!frame) return frame.error();
  if (!frame->has_value()) return InvalidArgumentError("incomplete packet");
  const FrameInfo& f = **frame;
  if (f.total() != bytes.size()) return InvalidArgumentError("trailing bytes after packet");
  return Decode(f.first_byte, bytes.substr(f.header_size, f.remaining), version);
}

}  // namespace seedance::mqtt
