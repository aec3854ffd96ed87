// Protocol Buffers wire format, the reading half: the fields of one message, in order, from
// bytes that may be anything (an answer from a server, later a request from a client). Never
// reads past the end; a field cut short, a varint longer than 10 bytes, a group (wire types
// 3 and 4, deprecated) or a wire type 6 or 7 makes Next() return false with error() set.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace seedance::util {

struct ProtobufField {
  uint32_t number = 0;
  uint32_t wire_type = 0;     // 0 varint, 1 fixed64, 2 bytes, 5 fixed32
  uint64_t number_value = 0;  // wire types 0, 1 and 5
  std::string_view bytes;     // wire type 2: a string, bytes or a nested message
};

class ProtobufReader {
 public:
  explicit ProtobufReader(std::string_view message) : in_(message) {}

  // The next field; false at the end of the message or on malformed bytes (then error()).
  bool Next(ProtobufField* field);
  const std::string& error() const { return error_; }

 private:
  bool Varint(uint64_t* v);
  bool Fail(std::string why);

  std::string_view in_;
  size_t pos_ = 0;
  std::string error_;
};

}  // namespace seedance::util
