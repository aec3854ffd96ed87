#include "modbus/codec.h"

#include <gtest/gtest.h>

namespace seedance::modbus {
namespace {

std::string Bytes(std::initializer_list<int> b) {
  std::string s;
  for (int v : b) s += static_cast<char>(v);
  return s;
}

TEST(ModbusCodec, RequestsAreTheSpecificationsBytes) {
  EXPECT_EQ(ReadRequestPdu(Area::kHoldingRegisters, 0x006B, 3),
            Bytes({0x03, 0x00, 0x6B, 0x00, 0x03}));
  EXPECT_EQ(ReadRequestPdu(Area::kCoils, 19, 19), Bytes({0x01, 0x00, 0x13, 0x00, 0x13}));
  // The serial line's classic: unit 1, read one holding register at 0 -> 01 03 00 00 00 01 84 0A
  EXPECT_EQ(RtuFrame(1, ReadRequestPdu(Area::kHoldingRegisters, 0, 1)),
            Bytes({0x01, 0x03, 0x00, 0x00, 0x00, 0x01, 0x84, 0x0A}));
  EXPECT_EQ(TcpFrame(0x1234, 7, ReadRequestPdu(Area::kInputRegisters, 8, 1)),
            Bytes({0x12, 0x34, 0x00, 0x00, 0x00, 0x06, 0x07, 0x04, 0x00, 0x08, 0x00, 0x01}));
}

TEST(ModbusCodec, AnswersAreCheckedAgainstTheRequest) {
  // The specification's example: registers 108-110 hold 0x022B, 0x0000, 0x0064.
  auto ok = DecodeReadResponse(Area::kHoldingRegisters, 3,
                               Bytes({0x03, 0x06, 0x02, 0x2B, 0x00, 0x00, 0x00, 0x64}));
  ASSERT_TRUE(ok.has_value());
  EXPECT_FALSE(ok->exception);
  EXPECT_EQ(ok->data, Bytes({0x02, 0x2B, 0x00, 0x00, 0x00, 0x64}));
  // 19 coils take 3 bytes.
  auto bits = DecodeReadResponse(Area::kCoils, 19, Bytes({0x01, 0x03, 0xCD, 0x6B, 0x05}));
  ASSERT_TRUE(bits.has_value());
  EXPECT_EQ(bits->data.size(), 3u);

  auto ex = DecodeReadResponse(Area::kHoldingRegisters, 3, Bytes({0x83, 0x02}));
  ASSERT_TRUE(ex.has_value());
  EXPECT_TRUE(ex->exception);
  EXPECT_EQ(ExceptionName(ex->exception_code), "ILLEGAL DATA ADDRESS");
  EXPECT_EQ(ExceptionName(0x42), "exception 0x42");

  auto error = [](Area a, uint16_t n, std::string pdu) {
    auto r = DecodeReadResponse(a, n, pdu);
    EXPECT_FALSE(r.has_value());
    return r.has_value() ? std::string() : r.error().message();
  };
  EXPECT_EQ(error(Area::kHoldingRegisters, 3, Bytes({0x04, 0x06, 0, 0, 0, 0, 0, 0})),
            "an answer with function 4 to a request with function 3");
  EXPECT_EQ(error(Area::kHoldingRegisters, 3, Bytes({0x03, 0x04, 0, 0, 0, 0})),
            "an answer of 4 data bytes to a read of 3 holding_registers (6 expected)");
  EXPECT_EQ(error(Area::kHoldingRegisters, 2, Bytes({0x03, 0x04, 0, 0, 0})),
            "an answer of 5 bytes declaring 4 data bytes");
  EXPECT_EQ(error(Area::kHoldingRegisters, 2, Bytes({0x83, 0x02, 0x00})),
            "an exception answer of 3 bytes (2 expected)");
  EXPECT_EQ(error(Area::kHoldingRegisters, 2, ""), "an empty answer");
  EXPECT_EQ(error(Area::kHoldingRegisters, 2, Bytes({0x03})), "an answer without its byte count");
}

TEST(ModbusCodec, TcpFramesAreFoundWholeAndAForeignHeaderIsAnError) {
  std::string two =
      TcpFrame(1, 1, Bytes({0x03, 0x02, 0x00, 0x2A})) + TcpFrame(2, 9, Bytes({0x83, 0x02}));
  for (size_t cut = 0; cut < 11; ++cut) {
    auto partial = PeekTcpFrame(std::string_view(two).substr(0, cut));
    ASSERT_TRUE(partial.has_value());
    EXPECT_FALSE(partial->has_value()) << cut;
  }
  auto first = PeekTcpFrame(two);
  ASSERT_TRUE(first.has_value() && first->has_value());
  EXPECT_EQ((*first)->first.transaction, 1);
  EXPECT_EQ((*first)->first.pdu, Bytes({0x03, 0x02, 0x00, 0x2A}));
  auto second = PeekTcpFrame(std::string_view(two).substr((*first)->second));
  ASSERT_TRUE(second.has_value() && second->has_value());
  EXPECT_EQ((*second)->first.unit, 9);
  EXPECT_EQ((*second)->second, 9u);

  auto foreign = PeekTcpFrame(Bytes({0, 1, 0, 5, 0, 2, 1, 3}));
  ASSERT_FALSE(foreign.has_value());
  EXPECT_EQ(foreign.error().message(), "protocol id 5 (0 is Modbus)");
  auto huge = PeekTcpFrame(Bytes({0, 1, 0, 0, 0x10, 0, 1, 3}));
  ASSERT_FALSE(huge.has_value());
  EXPECT_EQ(huge.error().message(), "an MBAP length of 4096 (2-254)");
  EXPECT_FALSE(PeekTcpFrame(Bytes({0, 1, 0, 0, 0, 1, 1})).has_value()) << "a unit without a PDU";
}

TEST(ModbusCodec, RtuFramesCheckCrcAndUnit) {
  std::string frame = RtuFrame(17, Bytes({0x03, 0x02, 0x12, 0x34}));
  EXPECT_EQ(frame.size(), RtuResponseBytes(Area::kHoldingRegisters, 1));
  auto pdu = CheckRtuFrame(17, frame);
  ASSERT_TRUE(pdu.has_value());
  EXPECT_EQ(*pdu, Bytes({0x03, 0x02, 0x12, 0x34}));
  EXPECT_FALSE(CheckRtuFrame(18, frame).has_value());
  std::string garbled = frame;
  garbled[3] ^= 0x01;
  auto bad = CheckRtuFrame(17, garbled);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("CRC"), std::string::npos);
  EXPECT_EQ(RtuResponseBytes(Area::kCoils, 19), 8u);
  EXPECT_EQ(RtuFrame(1, Bytes({0x83, 0x02})).size(), kRtuExceptionBytes);
}

TEST(ModbusCodec, SerialTimingFollowsTheSpecification) {
  // 9600 baud, 11 bits a character: 3.5 characters = 4.01 ms, 1.5 = 1.72 ms.
  EXPECT_EQ(InterFrameDelay(9600, 11).count(), 4011);
  EXPECT_EQ(InterCharTimeout(9600, 11).count(), 1719);
  // Above 19,200 baud the specification fixes 1.75 ms and 750 µs.
  EXPECT_EQ(InterFrameDelay(115200, 11).count(), 1750);
  EXPECT_EQ(InterCharTimeout(38400, 10).count(), 750);
}

}  // namespace
}  // namespace seedance::modbus
