// Protocol Buffers wire format, the writing half: varints, fixed 64-bit numbers, bytes and
// nested messages appended to a string (https://protobuf.dev/programming-guides/encoding/).
//
// Why not a library: the one Debian ships as a static archive (protobuf-c) needs protoc-c and
// generated code at build time for each schema, and the messages we write (Prometheus remote
// write, a handful of fields) are a few lines each by hand. Written fields follow the schema's
// field numbers and types; the caller keeps to the schema.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace seedance::util {

class ProtobufWriter {
 public:
  // Appends to `out`, which outlives the writer.
  explicit ProtobufWriter(std::string& out) : out_(out) {}

  // Wire type 0: int32, int64, uint32, uint64, bool, enum (negative int64 as 10 bytes).
  void Varint(uint32_t field, uint64_t value);
  void Int64(uint32_t field, int64_t value) { Varint(field, static_cast<uint64_t>(value)); }
  // Wire type 1.
  void Double(uint32_t field, double value);
  void Fixed64(uint32_t field, uint64_t value);
  // Wire type 5.
  void Fixed32(uint32_t field, uint32_t value);
  // Wire type 2: string, bytes.
  void Bytes(uint32_t field, std::string_view value);

  // A nested message: Begin writes its tag, the body follows, End writes its length in front
  // of the body (moving the body when the length takes more than one byte). Nests.
  size_t BeginMessage(uint32_t field);
  void EndMessage(size_t begin);

  // The bytes a varint of `v` takes (1 to 10).
  static size_t VarintSize(uint64_t v);

 private:
  void Tag(uint32_t field, uint32_t wire_type) { RawVarint((uint64_t{field} << 3) | wire_type); }
  void RawVarint(uint64_t v);

  std::string& out_;
};

}  // namespace seedance::util
