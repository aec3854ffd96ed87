// The MQTT wire primitives the codec's two halves share: integers, variable byte integers,
// strings and properties, written (Writer) and read with every length checked (Reader).
// Internal to the codec (codec_encode.cc, codec.cc).
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "mqtt/packet.h"
#include "seedance/status.h"

namespace seedance::mqtt::wire {

inline constexpr size_t kMaxRemaining = 268435455;  // 4-byte variable byte integer

enum class PropKind { kByte, kU16, kU32, kVarint, kString, kBinary, kPair, kUnknown };

inline PropKind KindOf(uint8_t id) {
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

inline void PutU8(std::string& o, uint8_t v) { o.push_back(static_cast<char>(v)); }
inline void PutU16(std::string& o, uint16_t v) {
  o.push_back(static_cast<char>(v >> 8));
  o.push_back(static_cast<char>(v & 0xFF));
}
inline void PutU32(std::string& o, uint32_t v) {
  PutU16(o, static_cast<uint16_t>(v >> 16));
  PutU16(o, static_cast<uint16_t>(v & 0xFFFF));
}
inline void PutVarint(std::string& o, uint32_t v) {
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

inline Status Malformed(const char* what) {
  return InvalidArgumentError(fmt::format("malformed {} packet", what));
}

inline bool HasWildcard(std::string_view topic) {
  return topic.find_first_of("+#") != std::string_view::npos;
}

}  // namespace seedance::mqtt::wire
