// The Modbus read protocol: request and response PDUs of function codes 1-4 (coils, discrete
// inputs, holding and input registers) and their two framings, TCP (the MBAP header) and RTU
// (a serial line: unit id, PDU, CRC-16). Pure functions over bytes, no I/O.
//
// Why our own codec rather than libmodbus (docs/modbus.md): Debian's libmodbus-dev has no static
// archive, so the one static binary could only load it at run time; reads are a small protocol
// (a 7-byte header, a 5-byte request, a length-prefixed answer, a CRC), and owning it lets every
// answer be checked as hostile input (transaction id, unit, function, byte count against what
// was asked) and fuzzed, and the I/O run on the event loop like the MQTT client's.
//
// Everything a device sends is untrusted: decoding never reads past the bytes given, and an
// answer that is not exactly the answer to the request is an error naming what is wrong.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "seedance/result.h"

namespace seedance::modbus {

// What a read reads; the value is its function code.
enum class Area : uint8_t {
  kCoils = 1,
  kDiscreteInputs = 2,
  kHoldingRegisters = 3,
  kInputRegisters = 4,
};
std::string_view AreaName(Area area);  // "coils", "discrete_inputs", ...
inline bool IsBitArea(Area area) { return area == Area::kCoils || area == Area::kDiscreteInputs; }

// The most one read may ask for (Modbus application protocol 1.1b3, 6.1-6.4).
inline constexpr uint16_t kMaxRegistersPerRead = 125;
inline constexpr uint16_t kMaxBitsPerRead = 2000;

// The request PDU: function code, start address, quantity (big-endian).
// REQUIRES: 1 <= count <= the area's maximum.
std::string ReadRequestPdu(Area area, uint16_t address, uint16_t count);

// A response PDU, checked against its request.
struct ReadAnswer {
  bool exception = false;
  uint8_t exception_code = 0;  // with `exception`
  // Bits: packed, the first item in the lowest bit of the first byte; registers: big-endian
  // 16-bit words. Exactly the bytes `count` items take.
  std::string data;
};
// kDataLoss naming what is wrong when `pdu` is not the answer to a read of `count` items of
// `area`: another function, a byte count that does not match (or the PDU's length), an
// exception PDU of the wrong length.
Result<ReadAnswer> DecodeReadResponse(Area area, uint16_t count, std::string_view pdu);
// The exception's name ("ILLEGAL DATA ADDRESS"), or "exception 0xNN" for codes the
// specification does not name.
std::string ExceptionName(uint8_t code);

// ---- Modbus TCP: the MBAP header (transaction id, protocol id 0, length, unit id) ----

inline constexpr size_t kMbapBytes = 7;
inline constexpr size_t kMaxTcpPduBytes = 253;

std::string TcpFrame(uint16_t transaction, uint8_t unit, std::string_view pdu);
struct TcpAdu {
  uint16_t transaction = 0;
  uint8_t unit = 0;
  std::string_view pdu;  // points into the bytes given
};
// The first whole frame at the start of `bytes` and its size; nullopt while more bytes are
// needed. kDataLoss when the header is not a Modbus one (protocol id not 0, a length below 2 or
// above 254): the stream cannot be resynchronised, the connection should be closed.
Result<std::optional<std::pair<TcpAdu, size_t>>> PeekTcpFrame(std::string_view bytes);

// ---- Modbus RTU: unit id, PDU, CRC-16 (low byte first) on a serial line ----

// CRC-16/MODBUS (polynomial 0xA001 reflected, initial 0xFFFF).
uint16_t Crc16(std::string_view bytes);
std::string RtuFrame(uint8_t unit, std::string_view pdu);
// The size of a normal answer's frame to a read of `count` items of `area`; an exception
// answer is kRtuExceptionBytes.
size_t RtuResponseBytes(Area area, uint16_t count);
inline constexpr size_t kRtuExceptionBytes = 5;
// The PDU of a whole answer frame from `unit`. kDataLoss for a CRC that does not match, another
// unit, or a frame too short to hold a PDU.
Result<std::string_view> CheckRtuFrame(uint8_t unit, std::string_view frame);
// The silence that separates frames (3.5 characters; 1.75 ms above 19,200 baud, as the serial
// line specification fixes it) and the longest gap inside a frame (1.5 characters; 750 µs above
// 19,200 baud). `bits_per_char`: start + data + parity + stop bits (11 for 8E1 or 8N2, 10 for
// 8N1).
std::chrono::microseconds InterFrameDelay(uint32_t baud, int bits_per_char);
std::chrono::microseconds InterCharTimeout(uint32_t baud, int bits_per_char);

}  // namespace seedance::modbus
