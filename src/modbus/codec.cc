#include "modbus/codec.h"

#include <fmt/format.h>

namespace seedance::modbus {
namespace {

void PutU16(std::string& out, uint16_t v) {
  out += static_cast<char>(v >> 8);
  out += static_cast<char>(v & 0xFF);
}

uint16_t GetU16(std::string_view b, size_t at) {
  return static_cast<uint16_t>((static_cast<uint8_t>(b[at]) << 8) |
                               static_cast<uint8_t>(b[at + 1]));
}

// Bytes the data of `count` items of `area` take in an answer.
size_t DataBytes(Area area, uint16_t count) {
  return IsBitArea(area) ? (count + 7u) / 8u : 2u * count;
}

}  // namespace

std::string_view AreaName(Area area) {
  switch (area) {
    case Area::kCoils:
      return "coils";
    case Area::kDiscreteInputs:
      return "discrete_inputs";
    case Area::kHoldingRegisters:
      return "holding_registers";
    case Area::kInputRegisters:
      return "input_registers";
  }
  return "unknown";
}

std::string ReadRequestPdu(Area area, uint16_t address, uint16_t count) {
  std::string pdu;
  pdu += static_cast<char>(area);
  PutU16(pdu, address);
  PutU16(pdu, count);
  return pdu;
}

Result<ReadAnswer> DecodeReadResponse(Area area, uint16_t count, std::string_view pdu) {
  if (pdu.empty()) return DataLossError("an empty answer");
  const uint8_t function = static_cast<uint8_t>(pdu[0]);
  const uint8_t asked = static_cast<uint8_t>(area);
  if (function == (asked | 0x80)) {
    if (pdu.size() != 2) {
      return DataLossError(fmt::format("an exception answer of {} bytes (2 expected)", pdu.size()));
    }
    return ReadAnswer{true, static_cast<uint8_t>(pdu[1]), {}};
  }
  if (function != asked) {
    return DataLossError(
        fmt::format("an answer with function {} to a request with function {}", function, asked));
  }
  const size_t want = DataBytes(area, count);
  if (pdu.size() < 2) return DataLossError("an answer without its byte count");
  const size_t declared = static_cast<uint8_t>(pdu[1]);
  if (declared != want) {
    return DataLossError(fmt::format("an answer of {} data bytes to a read of {} {} ({} expected)",
                                     declared, count, AreaName(area), want));
  }
  if (pdu.size() != 2 + want) {
    return DataLossError(
        fmt::format("an answer of {} bytes declaring {} data bytes", pdu.size(), declared));
  }
  return ReadAnswer{false, 0, std::string(pdu.substr(2))};
}

std::string ExceptionName(uint8_t code) {
  switch (code) {
    case 0x01:
      return "ILLEGAL FUNCTION";
    case 0x02:
      return "ILLEGAL DATA ADDRESS";
    case 0x03:
      return "ILLEGAL DATA VALUE";
    case 0x04:
      return "SERVER DEVICE FAILURE";
    case 0x05:
      return "ACKNOWLEDGE";
    case 0x06:
      return "SERVER DEVICE BUSY";
    case 0x08:
      return "MEMORY PARITY ERROR";
    case 0x0A:
      return "GATEWAY PATH UNAVAILABLE";
    case 0x0B:
      return "GATEWAY TARGET DEVICE FAILED TO RESPOND";
    default:
      return fmt::format("exception 0x{:02X}", code);
  }
}

std::string TcpFrame(uint16_t transaction, uint8_t unit, std::string_view pdu) {
  std::string out;
  out.reserve(kMbapBytes + pdu.size());
  PutU16(out, transaction);
  PutU16(out, 0);  // protocol: Modbus
  PutU16(out, static_cast<uint16_t>(pdu.size() + 1));
  out += static_cast<char>(unit);
  out += pdu;
  return out;
}

Result<std::optional<std::pair<TcpAdu, size_t>>> PeekTcpFrame(std::string_view bytes) {
  using Out = std::optional<std::pair<TcpAdu, size_t>>;
  if (bytes.size() < 6) return Out();
  const uint16_t protocol = GetU16(bytes, 2);
  const uint16_t length = GetU16(bytes, 4);  // unit id + PDU
  if (protocol != 0) return DataLossError(fmt::format("protocol id {} (0 is Modbus)", protocol));
  if (length < 2 || length > kMaxTcpPduBytes + 1) {
    return DataLossError(fmt::format("an MBAP length of {} (2-254)", length));
  }
  const size_t total = 6 + length;
  if (bytes.size() < total) return Out();
  TcpAdu adu{GetU16(bytes, 0), static_cast<uint8_t>(bytes[6]),
             bytes.substr(kMbapBytes, length - 1)};
  return Out(std::make_pair(adu, total));
}

uint16_t Crc16(std::string_view bytes) {
  uint16_t crc = 0xFFFF;
  for (char c : bytes) {
    crc ^= static_cast<uint8_t>(c);
    for (int i = 0; i < 8; ++i)
      crc = (crc & 1) ? static_cast<uint16_t>((crc >> 1) ^ 0xA001) : crc >> 1;
  }
  return crc;
}

std::string RtuFrame(uint8_t unit, std::string_view pdu) {
  std::string out;
  out += static_cast<char>(unit);
  out += pdu;
  const uint16_t crc = Crc16(out);
  out += static_cast<char>(crc & 0xFF);
  out += static_cast<char>(crc >> 8);
  return out;
}

size_t RtuResponseBytes(Area area, uint16_t count) { return 1 + 2 + DataBytes(area, count) + 2; }

Result<std::string_view> CheckRtuFrame(uint8_t unit, std::string_view frame) {
  if (frame.size() < 4) return DataLossError(fmt::format("a frame of {} bytes", frame.size()));
  const uint16_t got = static_cast<uint16_t>(static_cast<uint8_t>(frame[frame.size() - 2]) |
                                             (static_cast<uint8_t>(frame.back()) << 8));
  const uint16_t want = Crc16(frame.substr(0, frame.size() - 2));
  if (got != want) return DataLossError(fmt::format("CRC {:04X}, {:04X} expected", got, want));
  if (static_cast<uint8_t>(frame[0]) != unit) {
    return DataLossError(
        fmt::format("an answer from unit {} to unit {}", static_cast<uint8_t>(frame[0]), unit));
  }
  return frame.substr(1, frame.size() - 3);
}

std::chrono::microseconds InterFrameDelay(uint32_t baud, int bits_per_char) {
  if (baud == 0 || baud > 19200) return std::chrono::microseconds(1750);
  return std::chrono::microseconds((35LL * bits_per_char * 1000000 / baud + 9) / 10);
}

std::chrono::microseconds InterCharTimeout(uint32_t baud, int bits_per_char) {
  if (baud == 0 || baud > 19200) return std::chrono::microseconds(750);
  return std::chrono::microseconds((15LL * bits_per_char * 1000000 / baud + 9) / 10);
}

}  // namespace seedance::modbus
