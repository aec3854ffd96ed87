#include "util/protobuf_writer.h"

#include <bit>
#include <cstring>

namespace seedance::util {

size_t ProtobufWriter::VarintSize(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

void ProtobufWriter::RawVarint(uint64_t v) {
  while (v >= 0x80) {
    out_.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out_.push_back(static_cast<char>(v));
}

void ProtobufWriter::Varint(uint32_t field, uint64_t value) {
  Tag(field, 0);
  RawVarint(value);
}

void ProtobufWriter::Fixed64(uint32_t field, uint64_t value) {
  Tag(field, 1);
  for (int i = 0; i < 8; ++i) {
    out_.push_back(static_cast<char>(value >> (8 * i)));  // little-endian
  }
}

void ProtobufWriter::Fixed32(uint32_t field, uint32_t value) {
  Tag(field, 5);
  for (int i = 0; i < 4; ++i) {
    out_.push_back(static_cast<char>(value >> (8 * i)));  // little-endian
  }
}

void ProtobufWriter::Double(uint32_t field, double value) {
  Fixed64(field, std::bit_cast<uint64_t>(value));
}

void ProtobufWriter::Bytes(uint32_t field, std::string_view value) {
  Tag(field, 2);
  RawVarint(value.size());
  out_.append(value);
}

size_t ProtobufWriter::BeginMessage(uint32_t field) {
  Tag(field, 2);
  out_.push_back('\0');  // the length's first byte; End makes room for more
  return out_.size();
}

void ProtobufWriter::EndMessage(size_t begin) {
  const size_t length = out_.size() - begin;
  const size_t extra = VarintSize(length) - 1;
  if (extra > 0) {
    out_.insert(begin, extra, '\0');
  }
  char* p = out_.data() + begin - 1;
  uint64_t v = length;
  while (v >= 0x80) {
    *p++ = static_cast<char>((v & 0x7F) | 0x80);
    v >>= 7;
  }
  *p = static_cast<char>(v);
}

}  // namespace seedance::util
