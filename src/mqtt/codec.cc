#include "mqtt/codec.h"

#include <fmt/format.h>

namespace seedance::mqtt {
namespace {

constexpr size_t kMaxRemaining = 268435455;  // 4-byte variable byte integer

enum class PropKind { kByte, kU16, kU32, kVarint, kString, kBinary, kPair, kUnknown };

PropKind KindOf(uint8_t id) {
  switch (id) {
    case 0x01:
    case 0x17:
    case 0x19:
    case 0x24:
    case 0x25:
    case 0x28:
    case 0x29:
    case 0x2A:
      return PropKind::kByte;
    case 0x13:
    case 0x21:
    case 0x22:
    case 0x23:
      return PropKind::kU16;
    case 0x02:
    case 0x11:
    case 0x18:
    case 0x27:
      return PropKind::kU32;
    case 0x0B:
      return PropKind::kVarint;
    case 0x03:
    case 0x08:
    case 0x12:
    case 0x15:
    case 0x1A:
    case 0x1C:
    case 0x1F:
      return PropKind::kString;
    case 0x09:
    case 0x16:
      return PropKind::kBinary;
    case 0x26:
      return PropKind::kPair;
    default:
      return PropKind::kUnknown;
  }
}

// ---- writing ----

void PutU8(std::string& o, uint8_t v) { o.push_back(static_cast<char>(v)); }
void PutU16(std::string& o, uint16_t v) {
  o.push_back(static_cast<char>(v >> 8));
  o.push_back(static_cast<char>(v & 0xFF));
}
void PutU32(std::string& o, uint32_t v) {
  PutU16(o, static_cast<uint16_t>(v >> 16));
  PutU16(o, static_cast<uint16_t>(v & 0xFFFF));
}
void PutVarint(std::string& o, uint32_t v) {
  do {
    uint8_t b = v % 128;
    v /= 128;
    if (v > 0) b |= 0x80;
    PutU8(o, b);
  } while (v > 0);
}

class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}
  void U8(uint8_t v) { PutU8(out_, v); }
  void U16(uint16_t v) { PutU16(out_, v); }
  void U32(uint32_t v) { PutU32(out_, v); }
  void Varint(uint32_t v) { PutVarint(out_, v); }
  void Str(std::string_view s) {
    if (s.size() > 0xFFFF) ok_ = false;
    U16(static_cast<uint16_t>(s.size()));
    out_.append(s.data(), s.size());
  }
  void Raw(std::string_view s) { out_.append(s.data(), s.size()); }
  void Props(const Properties& props) {
    std::string body;
    Writer w(body);
    for (const Property& p : props) {
      w.Varint(p.id);
      switch (KindOf(p.id)) {
        case PropKind::kByte:
          w.U8(static_cast<uint8_t>(p.number));
          break;
        case PropKind::kU16:
          w.U16(static_cast<uint16_t>(p.number));
          break;
        case PropKind::kU32:
          w.U32(p.number);
          break;
        case PropKind::kVarint:
          w.Varint(p.number);
          break;
        case PropKind::kString:
        case PropKind::kBinary:
          w.Str(p.text);
          break;
        case PropKind::kPair:
          w.Str(p.text);
          w.Str(p.value);
          break;
        case PropKind::kUnknown:
          ok_ = false;
          break;
      }
    }
    if (!w.ok()) ok_ = false;
    Varint(static_cast<uint32_t>(body.size()));
    Raw(body);
  }
  bool ok() const { return ok_; }

 private:
  std::string& out_;
  bool ok_ = true;
};

// ---- reading ----

class Reader {
 public:
  explicit Reader(std::string_view data) : d_(data) {}
  bool ok() const { return ok_; }
  bool empty() const { return pos_ >= d_.size(); }
  size_t left() const { return ok_ ? d_.size() - pos_ : 0; }
  uint8_t U8() {
    if (!Need(1)) return 0;
    return static_cast<uint8_t>(d_[pos_++]);
  }
  uint16_t U16() {
    if (!Need(2)) return 0;
    uint16_t v = static_cast<uint16_t>((static_cast<uint8_t>(d_[pos_]) << 8) |
                                       static_cast<uint8_t>(d_[pos_ + 1]));
    pos_ += 2;
    return v;
  }
  uint32_t U32() {
    uint32_t hi = U16();
    return (hi << 16) | U16();
  }
  uint32_t Varint() {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      uint8_t b = U8();
      if (!ok_) return 0;
      v |= static_cast<uint32_t>(b & 0x7F) << (7 * i);
      if ((b & 0x80) == 0) return v;
    }
    ok_ = false;
    return 0;
  }
  std::string Str() { return std::string(StrView()); }
  std::string Rest() { return std::string(RestView()); }
  // Views into the packet, for decoding into existing strings.
  std::string_view StrView() {
    uint16_t n = U16();
    if (!Need(n)) return {};
    std::string_view s = d_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  std::string_view RestView() {
    if (!ok_) return {};
    std::string_view s = d_.substr(pos_);
    pos_ = d_.size();
    return s;
  }
  Properties Props() {
    Properties out;
    uint32_t n = Varint();
    if (!Need(n)) return out;
    Reader r(d_.substr(pos_, n));
    pos_ += n;
    while (r.ok() && !r.empty()) {
      Property p;
      uint32_t id = r.Varint();
      if (id > 0xFF) {
        ok_ = false;
        return out;
      }
      p.id = static_cast<uint8_t>(id);
      switch (KindOf(p.id)) {
        case PropKind::kByte:
          p.number = r.U8();
          break;
        case PropKind::kU16:
          p.number = r.U16();
          break;
        case PropKind::kU32:
          p.number = r.U32();
          break;
        case PropKind::kVarint:
          p.number = r.Varint();
          break;
        case PropKind::kString:
        case PropKind::kBinary:
          p.text = r.Str();
          break;
        case PropKind::kPair:
          p.text = r.Str();
          p.value = r.Str();
          break;
        case PropKind::kUnknown:
          ok_ = false;
          return out;
      }
      out.push_back(std::move(p));
    }
    if (!r.ok()) ok_ = false;
    return out;
  }

 private:
  bool Need(size_t n) {
    if (!ok_ || d_.size() - pos_ < n) {
      ok_ = false;
      return false;
    }
    return true;
  }
  std::string_view d_;
  size_t pos_ = 0;
  bool ok_ = true;
};

Status Malformed(const char* what) {
  return InvalidArgumentError(fmt::format("malformed {} packet", what));
}

bool HasWildcard(std::string_view topic) {
  return topic.find_first_of("+#") != std::string_view::npos;
}

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
