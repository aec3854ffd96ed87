// The `modbus` source's configuration: where the devices are (TCP gateway or serial line), how
// patiently to ask them, and the poll groups with their tags. Checked when the config loads
// (`seedance validate`): tags that cannot be read as declared fail with the tag's file:line.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "modbus/codec.h"
#include "modbus/tags.h"
#include "seedance/options.h"
#include "seedance/result.h"

namespace seedance::sources::modbus_source {

enum class Parity { kNone, kEven, kOdd };
enum class Report { kAll, kChanges };

// Where the devices are: "tcp://host[:port]" (port 502 by default) or "rtu:/dev/ttyUSB0".
struct Endpoint {
  bool rtu = false;
  std::string host;  // tcp
  uint16_t port = 502;
  std::string device;  // rtu
};
Result<Endpoint> ParseEndpoint(const std::string& url);

struct TagSettings {
  std::string name;
  modbus::Area area = modbus::Area::kHoldingRegisters;
  int64_t address = 0;
  modbus::TagType type = modbus::TagType::kUint16;
  modbus::WordOrder order = modbus::WordOrder::kABCD;
  double scale = 1;
  double offset = 0;
  int64_t length = 0;
  std::string location;  // file:line:column of the tag's section
};

struct GroupSettings {
  std::string name;
  int64_t unit = 1;
  std::chrono::nanoseconds interval{std::chrono::seconds(1)};
  Report report = Report::kAll;
  std::chrono::nanoseconds heartbeat{std::chrono::seconds(60)};
  std::vector<TagSettings> tags;
  std::string location;
  // Filled by the check: the tags as the codec takes them.
  std::vector<modbus::Tag> codec_tags;
};

struct ModbusSettings {
  Endpoint endpoint;
  // Serial line (rtu).
  int64_t baud = 9600;
  Parity parity = Parity::kEven;
  int64_t stop_bits = 1;
  // Every device.
  std::chrono::nanoseconds timeout{std::chrono::seconds(1)};
  int64_t retries = 2;
  std::chrono::nanoseconds retry_backoff{std::chrono::milliseconds(50)};
  std::chrono::nanoseconds reconnect_max{std::chrono::seconds(5)};
  int64_t max_registers = modbus::kMaxRegistersPerRead;
  int64_t max_bits = modbus::kMaxBitsPerRead;
  int64_t max_gap = 0;
  std::string topic = "modbus/{unit}/{group}";
  std::vector<GroupSettings> groups;

  modbus::PlanLimits limits() const {
    return modbus::PlanLimits{.max_registers = static_cast<uint16_t>(max_registers),
                              .max_bits = static_cast<uint16_t>(max_bits),
                              .max_gap = static_cast<uint16_t>(max_gap)};
  }
  // Bits per character on the line: start + 8 data + parity + stop.
  int bits_per_char() const {
    return 1 + 8 + (parity == Parity::kNone ? 0 : 1) + static_cast<int>(stop_bits);
  }
};

const Options<ModbusSettings>& ModbusOptions();
// Checks what the schema alone cannot (each group's tags together, each tag within one read,
// units a serial line can address) and fills GroupSettings::codec_tags. Errors name the tag's or
// group's file:line. `p`: the section the settings were bound from.
Status Prepare(ModbusSettings& settings, const Params& p);

}  // namespace seedance::sources::modbus_source
