// Tags: named values at addresses of a Modbus device (a meter's voltage as a float32 in two
// holding registers, a breaker's state in one coil), how a poll group's tags are checked, how
// they are read in the fewest requests the protocol allows, and how each value is decoded from
// what the device answered.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "modbus/codec.h"
#include "seedance/status.h"

namespace seedance::modbus {

enum class TagType { kBool, kInt16, kUint16, kInt32, kUint32, kInt64, kFloat32, kFloat64, kString };
// Parses "bool", "int16", ..., "string"; false for anything else.
bool ParseTagType(std::string_view text, TagType* type);
std::string_view TagTypeName(TagType type);

// How a value's bytes lie in its registers, written for 32 bits with A the most significant
// byte (Telegraf's and most meters' manuals' notation): ABCD big-endian (the Modbus standard),
// CDAB words swapped ("little-endian word order", common on meters), BADC bytes swapped in each
// word, DCBA little-endian. 64-bit values extend the same rule to four words (ABCD: ABCDEFGH,
// CDAB: GHEFCDAB, BADC: BADCFEHG, DCBA: HGFEDCBA); 16-bit ones take the byte rule only (BADC and
// DCBA swap the two bytes); a string's characters follow the byte rule in each register.
enum class WordOrder { kABCD, kCDAB, kBADC, kDCBA };
bool ParseWordOrder(std::string_view text, WordOrder* order);

struct Tag {
  std::string name;
  Area area = Area::kHoldingRegisters;
  uint16_t address = 0;  // the first register or bit, 0-based as on the wire
  TagType type = TagType::kUint16;
  WordOrder order = WordOrder::kABCD;
  double scale = 1;  // value = raw x scale + offset (numbers only)
  double offset = 0;
  uint16_t length = 0;  // kString: registers (2 characters each)
};

// The registers (or bits) the tag takes: bool 1 bit in a bit area, or 1 register (true when it
// is not 0); 16-bit 1, 32-bit 2, 64-bit 4, string `length`.
uint32_t TagWidth(const Tag& tag);

// A group's tags are readable as declared: names unique and non-empty, bits only as bool, a
// string with a length of 1-125 registers, scale and offset only on numbers, every tag inside
// the 65,536 addresses, and no two tags of one area sharing an address. kInvalidArgument naming
// the tag(s); `culprit`, when given, is set to the index of the tag the error is about (the
// later one of two).
Status CheckTags(const std::vector<Tag>& tags, size_t* culprit = nullptr);

struct PlanLimits {
  uint16_t max_registers = kMaxRegistersPerRead;  // per request, 1-125
  uint16_t max_bits = kMaxBitsPerRead;            // per request, 1-2000
  // Unused registers (or bits) one request may read to serve the tags on both sides of them;
  // 0: only adjacent tags share a request. Devices that refuse reads of addresses they do not
  // map answer ILLEGAL DATA ADDRESS: keep 0 for them.
  uint16_t max_gap = 0;
};

struct PlannedRead {
  Area area = Area::kHoldingRegisters;
  uint16_t address = 0;
  uint16_t count = 0;
  std::vector<size_t> tags;  // indexes of the tags it serves, in address order
};

// The fewest reads that serve every tag within `limits` (greedy in address order per area,
// which is optimal for intervals on a line: a read starts at a tag and takes every following
// tag it can). REQUIRES: CheckTags(tags) is ok, and every tag fits in one read.
std::vector<PlannedRead> PlanReads(const std::vector<Tag>& tags, const PlanLimits& limits);

using TagValue = std::variant<bool, double, int64_t, uint64_t, std::string>;
// The tag's value from the data of `read` (ReadAnswer::data), scale and offset applied (an
// integer with the default scale 1 and offset 0 stays an integer). REQUIRES: the tag is one of
// the read's and `data` is as long as the read's answer.
TagValue DecodeTag(const Tag& tag, const PlannedRead& read, std::string_view data);
// The value as JSON: a number (non-finite floats: null), true/false, or a string (its trailing
// NUL and space padding cut; invalid UTF-8 replaced).
void AppendTagValueJson(const TagValue& value, std::string& out);

}  // namespace seedance::modbus
