#include "storage/event_codec.h"

#include <cstdint>

#include "util/little_endian.h"

namespace seedance::storage {
namespace {

constexpr uint8_t kVersion = 1;

using util::PutFixed32;
using util::PutFixed64;

void PutBytes(std::string& o, std::string_view s) {
  PutFixed32(o, static_cast<uint32_t>(s.size()));
  o.append(s.data(), s.size());
}

class Cursor {
 public:
  explicit Cursor(std::string_view d) : d_(d) {}
  bool ok() const { return ok_; }
  bool done() const { return pos_ == d_.size(); }
  uint64_t U64() {
    if (!Need(8)) return 0;
    uint64_t v = util::GetFixed64(d_.data() + pos_);
    pos_ += 8;
    return v;
  }
  uint32_t U32() {
    if (!Need(4)) return 0;
    uint32_t v = util::GetFixed32(d_.data() + pos_);
    pos_ += 4;
    return v;
  }
  uint8_t U8() { return Need(1) ? static_cast<uint8_t>(d_[pos_++]) : 0; }
  // Valid while the record is; assign() it into the event (reusing the string's storage).
  std::string_view Bytes() {
    uint32_t n = U32();
    if (!Need(n)) return {};
    std::string_view s = d_.substr(pos_, n);
    pos_ += n;
    return s;
  }

 private:
  bool Need(size_t n) {
    if (!ok_ || d_.size() - pos_ < n) ok_ = false;
    return ok_;
  }
  std::string_view d_;
  size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace

void EncodeEvent(const Event& e, std::string& out) {
  out.push_back(static_cast<char>(kVersion));
  PutFixed64(out, e.id);
  PutFixed64(out, static_cast<uint64_t>(e.event_time_ns));
  PutFixed64(out, static_cast<uint64_t>(e.ingest_time_ns));
  out.push_back(static_cast<char>(e.format));
  PutBytes(out, e.source);
  PutBytes(out, e.topic);
  PutFixed32(out, static_cast<uint32_t>(e.headers.size()));
  for (const Header& h : e.headers) {
    PutBytes(out, h.name);
    PutBytes(out, h.value);
  }
  PutBytes(out, e.payload);
}

Status DecodeEvent(std::string_view bytes, Event* e) {
  Cursor c(bytes);
  if (c.U8() != kVersion) return DataLossError("unknown event encoding version");
  e->id = c.U64();
  e->event_time_ns = static_cast<int64_t>(c.U64());
  e->ingest_time_ns = static_cast<int64_t>(c.U64());
  uint8_t format = c.U8();
  e->format = format == static_cast<uint8_t>(PayloadFormat::kRaw) ? PayloadFormat::kRaw
                                                                  : PayloadFormat::kJson;
  e->source.assign(c.Bytes());
  e->topic.assign(c.Bytes());
  uint32_t n = c.U32();
  e->headers.clear();
  for (uint32_t i = 0; i < n && c.ok(); ++i) {
    std::string_view name = c.Bytes();
    std::string_view value = c.Bytes();
    e->headers.push_back(Header{std::string(name), std::string(value)});
  }
  e->payload.assign(c.Bytes());
  if (!c.ok() || !c.done()) return DataLossError("truncated or malformed event record");
  return Status::Ok();
}

}  // namespace seedance::storage
