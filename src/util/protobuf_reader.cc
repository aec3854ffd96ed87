#include "util/protobuf_reader.h"

namespace seedance::util {

bool ProtobufReader::Fail(std::string why) {
  error_ = std::move(why);
  pos_ = in_.size();
  return false;
}

bool ProtobufReader::Varint(uint64_t* v) {
  *v = 0;
  for (int i = 0; i < 10; ++i) {
    if (pos_ >= in_.size()) return Fail("a varint is cut short");
    const auto b = static_cast<unsigned char>(in_[pos_++]);
    *v |= uint64_t{b & 0x7Fu} << (7 * i);
    if (b < 0x80) return true;
  }
  return Fail("a varint is longer than 10 bytes");
}

bool ProtobufReader::Next(ProtobufField* field) {
  if (pos_ >= in_.size()) return false;
  uint64_t tag = 0;
  if (!Varint(&tag)) return false;
  if ((tag >> 3) == 0 || (tag >> 3) > 0x1FFFFFFF) return Fail("a field number is out of range");
  field->number = static_cast<uint32_t>(tag >> 3);
  field->wire_type = static_cast<uint32_t>(tag & 7);
  field->number_value = 0;
  field->bytes = {};
  switch (field->wire_type) {
    case 0:
      return Varint(&field->number_value);
    case 1:
    case 5: {
      const size_t n = field->wire_type == 1 ? 8 : 4;
      if (in_.size() - pos_ < n) return Fail("a fixed-size field is cut short");
      for (size_t i = 0; i < n; ++i) {
        field->number_value |= uint64_t{static_cast<unsigned char>(in_[pos_ + i])} << (8 * i);
      }
      pos_ += n;
      return true;
    }
    case 2: {
      uint64_t n = 0;
      if (!Varint(&n)) return false;
      if (n > in_.size() - pos_) return Fail("a length-delimited field is cut short");
      field->bytes = in_.substr(pos_, static_cast<size_t>(n));
      pos_ += static_cast<size_t>(n);
      return true;
    }
    default:
      return Fail("wire type " + std::to_string(field->wire_type) + " is not supported");
  }
}

}  // namespace seedance::util
