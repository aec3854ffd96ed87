#include "modbus/tags.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

namespace seedance::modbus {
namespace {

Tag T(std::string name, uint16_t address, TagType type, WordOrder order = WordOrder::kABCD,
      Area area = Area::kHoldingRegisters) {
  Tag t;
  t.name = std::move(name);
  t.address = address;
  t.type = type;
  t.order = order;
  t.area = area;
  return t;
}

std::string Regs(std::initializer_list<uint16_t> words) {
  std::string s;
  for (uint16_t w : words) {
    s += static_cast<char>(w >> 8);
    s += static_cast<char>(w & 0xFF);
  }
  return s;
}

TagValue One(const Tag& t, std::string data) {
  PlannedRead r{t.area, t.address, static_cast<uint16_t>(TagWidth(t)), {0}};
  return DecodeTag(t, r, data);
}

TEST(ModbusTags, FloatsInEveryWordOrder) {
  // 123.456f is 0x42F6E979.
  EXPECT_FLOAT_EQ(std::get<double>(One(T("a", 0, TagType::kFloat32), Regs({0x42F6, 0xE979}))),
                  123.456f);
  EXPECT_FLOAT_EQ(
      std::get<double>(One(T("c", 0, TagType::kFloat32, WordOrder::kCDAB), Regs({0xE979, 0x42F6}))),
      123.456f);
  EXPECT_FLOAT_EQ(
      std::get<double>(One(T("b", 0, TagType::kFloat32, WordOrder::kBADC), Regs({0xF642, 0x79E9}))),
      123.456f);
  EXPECT_FLOAT_EQ(
      std::get<double>(One(T("d", 0, TagType::kFloat32, WordOrder::kDCBA), Regs({0x79E9, 0xF642}))),
      123.456f);
  // float64 1.5 = 0x3FF8000000000000; CDAB reverses the four words.
  EXPECT_EQ(std::get<double>(One(T("e", 0, TagType::kFloat64), Regs({0x3FF8, 0, 0, 0}))), 1.5);
  EXPECT_EQ(std::get<double>(
                One(T("f", 0, TagType::kFloat64, WordOrder::kCDAB), Regs({0, 0, 0, 0x3FF8}))),
            1.5);
  EXPECT_EQ(std::get<double>(
                One(T("g", 0, TagType::kFloat64, WordOrder::kDCBA), Regs({0, 0, 0, 0xF83F}))),
            1.5);
}

TEST(ModbusTags, IntegersSignsAndScale) {
  EXPECT_EQ(std::get<uint64_t>(One(T("u32", 0, TagType::kUint32), Regs({0x0001, 0x0002}))), 65538u);
  EXPECT_EQ(std::get<uint64_t>(
                One(T("u32", 0, TagType::kUint32, WordOrder::kCDAB), Regs({0x0002, 0x0001}))),
            65538u);
  EXPECT_EQ(std::get<int64_t>(One(T("i16", 0, TagType::kInt16), Regs({0xFFFE}))), -2);
  EXPECT_EQ(std::get<int64_t>(One(T("i16", 0, TagType::kInt16, WordOrder::kBADC), Regs({0xFEFF}))),
            -2);
  EXPECT_EQ(std::get<int64_t>(One(T("i32", 0, TagType::kInt32), Regs({0xFFFF, 0xFFFF}))), -1);
  EXPECT_EQ(std::get<int64_t>(One(T("i64", 0, TagType::kInt64), Regs({0x8000, 0, 0, 0}))),
            INT64_MIN);
  Tag volts = T("volts", 0, TagType::kUint16);
  volts.scale = 0.1;
  volts.offset = -1;
  EXPECT_DOUBLE_EQ(std::get<double>(One(volts, Regs({2305}))), 229.5);
  EXPECT_EQ(std::get<bool>(One(T("on", 0, TagType::kBool), Regs({0x0100}))), true);
}

TEST(ModbusTags, BitsAndStrings) {
  // Coils 20..38 answered as CD 6B 05: coil 20 is bit 0 of 0xCD.
  Tag c = T("c", 22, TagType::kBool, WordOrder::kABCD, Area::kCoils);
  PlannedRead r{Area::kCoils, 20, 19, {0}};
  std::string data = {static_cast<char>(0xCD), 0x6B, 0x05};
  EXPECT_TRUE(std::get<bool>(DecodeTag(c, r, data)));  // 0xCD = 1100 1101: bit 2 is 1
  c.address = 21;
  EXPECT_FALSE(std::get<bool>(DecodeTag(c, r, data)));
  c.address = 38;  // bit 18: 0x05 bit 2
  EXPECT_TRUE(std::get<bool>(DecodeTag(c, r, data)));

  Tag s = T("serial", 0, TagType::kString);
  s.length = 4;
  EXPECT_EQ(std::get<std::string>(One(s, "EM340 \0\0")), "EM340");
  s.order = WordOrder::kBADC;
  EXPECT_EQ(std::get<std::string>(One(s, "ME43 0\0\0")), "EM340");
  std::string json;
  AppendTagValueJson(TagValue(std::string("a\"b")), json);
  AppendTagValueJson(TagValue(std::nan("")), json);
  AppendTagValueJson(TagValue(int64_t{-3}), json);
  EXPECT_EQ(json, "\"a\\\"b\"null-3");
}

TEST(ModbusTags, ChecksNameWhatIsImpossible) {
  auto why = [](std::vector<Tag> tags) {
    Status s = CheckTags(tags);
    return s.ok() ? std::string("ok") : s.message();
  };
  EXPECT_EQ(why({T("a", 0, TagType::kFloat32), T("b", 2, TagType::kUint16)}), "ok");
  EXPECT_EQ(why({T("a", 0, TagType::kFloat32), T("b", 1, TagType::kUint16)}),
            "tags \"a\" (holding_registers 0-1) and \"b\" (holding_registers 1) overlap");
  EXPECT_EQ(why({T("a", 5, TagType::kUint16), T("b", 5, TagType::kInt16)}),
            "tags \"a\" and \"b\" both start at holding_registers 5");
  // The same address in another area is another register.
  EXPECT_EQ(why({T("a", 5, TagType::kUint16),
                 T("b", 5, TagType::kUint16, WordOrder::kABCD, Area::kInputRegisters)}),
            "ok");
  EXPECT_EQ(why({T("a", 65534, TagType::kFloat64)}),
            "tag \"a\": addresses 65534-65537 run past the last address, 65535");
  EXPECT_EQ(why({T("a", 0, TagType::kFloat32, WordOrder::kABCD, Area::kCoils)}),
            "tag \"a\": coils hold bits: its type must be bool, not float32");
  EXPECT_EQ(why({T("s", 0, TagType::kString)}),
            "tag \"s\": a string needs a length of 1-125 registers (2 characters each), not 0");
  Tag scaled = T("on", 0, TagType::kBool);
  scaled.scale = 2;
  EXPECT_EQ(why({scaled}), "tag \"on\": scale and offset apply to numbers, not a bool");
  EXPECT_EQ(why({T("a", 0, TagType::kUint16), T("a", 1, TagType::kUint16)}),
            "tag \"a\" named twice");

  // The culprit is the tag the error is about (the later of two), so the config can name its
  // line.
  size_t culprit = 99;
  EXPECT_FALSE(CheckTags({T("a", 4, TagType::kUint16), T("b", 0, TagType::kFloat32),
                          T("c", 1, TagType::kUint16)},
                         &culprit)
                   .ok());
  EXPECT_EQ(culprit, 2u);
  EXPECT_FALSE(
      CheckTags({T("a", 0, TagType::kUint16), T("s", 1, TagType::kString)}, &culprit).ok());
  EXPECT_EQ(culprit, 1u);
}

TEST(ModbusTags, ReadsAreTheFewestTheLimitsAllow) {
  // 300 contiguous registers: 125 + 125 + 50.
  std::vector<Tag> tags;
  for (int i = 0; i < 300; ++i) tags.push_back(T("r" + std::to_string(i), i, TagType::kUint16));
  auto reads = PlanReads(tags, PlanLimits{});
  ASSERT_EQ(reads.size(), 3u);
  EXPECT_EQ(reads[0].count, 125);
  EXPECT_EQ(reads[1].address, 125);
  EXPECT_EQ(reads[2].count, 50);
  EXPECT_EQ(reads[2].tags.size(), 50u);
  // A float32 never straddles two reads: the first read stops before it.
  tags = {T("a", 0, TagType::kUint16)};
  for (int i = 1; i < 124; ++i) tags.push_back(T("r" + std::to_string(i), i, TagType::kUint16));
  tags.push_back(T("f", 124, TagType::kFloat32));
  reads = PlanReads(tags, PlanLimits{});
  ASSERT_EQ(reads.size(), 2u);
  EXPECT_EQ(reads[0].count, 124);
  EXPECT_EQ(reads[1].address, 124);
  EXPECT_EQ(reads[1].count, 2);
  // Gaps: joined only up to max_gap; areas never share a read; a lower limit is honoured.
  tags = {T("a", 0, TagType::kUint16), T("b", 4, TagType::kUint16),
          T("c", 4, TagType::kUint16, WordOrder::kABCD, Area::kInputRegisters)};
  EXPECT_EQ(PlanReads(tags, PlanLimits{}).size(), 3u);
  PlanLimits gap3;
  gap3.max_gap = 3;
  reads = PlanReads(tags, gap3);
  ASSERT_EQ(reads.size(), 2u);
  EXPECT_EQ(reads[0].count, 5);
  PlanLimits small;
  small.max_registers = 10;
  tags.clear();
  for (int i = 0; i < 25; ++i) tags.push_back(T("r" + std::to_string(i), i, TagType::kUint16));
  EXPECT_EQ(PlanReads(tags, small).size(), 3u);
  // 2,000 coils a read.
  tags.clear();
  for (int i = 0; i < 2500; ++i) {
    tags.push_back(T("c" + std::to_string(i), i, TagType::kBool, WordOrder::kABCD, Area::kCoils));
  }
  reads = PlanReads(tags, PlanLimits{});
  ASSERT_EQ(reads.size(), 2u);
  EXPECT_EQ(reads[0].count, 2000);
}

}  // namespace
}  // namespace seedance::modbus
