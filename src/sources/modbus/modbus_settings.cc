#include "sources/modbus/modbus_settings.h"

#include <fmt/format.h>

#include <charconv>
#include <set>

namespace seedance::sources::modbus_source {
namespace {

std::function<Status(const ParamValue&)> DurationIn(std::chrono::nanoseconds lo,
                                                    std::chrono::nanoseconds hi,
                                                    std::string message) {
  return [lo, hi, message](const ParamValue& v) {
    const auto* d = std::get_if<std::chrono::nanoseconds>(&v);
    if (d == nullptr || (*d >= lo && *d <= hi)) return Status::Ok();
    return InvalidArgumentError(message);
  };
}

const Options<TagSettings>& TagOptions() {
  using T = TagSettings;
  using modbus::TagType;
  static const Options<T> o =
      Options<T>()
          .Add(&T::name, {.name = "name", .doc = "the value's name in the event", .required = true})
          .Enum(&T::area,
                {.name = "area",
                 .doc = "coil (FC 1), discrete_input (FC 2), holding (FC 3) or input (FC 4)",
                 .default_value = "holding"},
                {{"holding", modbus::Area::kHoldingRegisters},
                 {"input", modbus::Area::kInputRegisters},
                 {"coil", modbus::Area::kCoils},
                 {"discrete_input", modbus::Area::kDiscreteInputs}})
          .Int(&T::address, {.name = "address",
                             .doc = "the first register or bit, 0-based as on the wire "
                                    "(register 40001 of a manual is holding 0)",
                             .required = true,
                             .validator = IntInRange(0, 65535)})
          .Enum(&T::type,
                {.name = "type",
                 .doc = "how the registers are read; bits are bool",
                 .default_value = "uint16"},
                {{"bool", TagType::kBool},
                 {"int16", TagType::kInt16},
                 {"uint16", TagType::kUint16},
                 {"int32", TagType::kInt32},
                 {"uint32", TagType::kUint32},
                 {"int64", TagType::kInt64},
                 {"float32", TagType::kFloat32},
                 {"float64", TagType::kFloat64},
                 {"string", TagType::kString}})
          .Enum(&T::order,
                {.name = "order",
                 .doc = "byte and word order, as 0xAABBCCDD lies in the registers: ABCD "
                        "big-endian (the standard), CDAB words swapped, BADC bytes swapped, "
                        "DCBA little-endian",
                 .default_value = "ABCD"},
                {{"ABCD", modbus::WordOrder::kABCD},
                 {"CDAB", modbus::WordOrder::kCDAB},
                 {"BADC", modbus::WordOrder::kBADC},
                 {"DCBA", modbus::WordOrder::kDCBA}})
          .Add(&T::scale, {.name = "scale",
                           .doc = "value = raw x scale + offset (numbers only)",
                           .default_value = "1"})
          .Add(&T::offset, {.name = "offset", .doc = "added after scale", .default_value = "0"})
          .Int(&T::length, {.name = "length",
                            .doc = "string: its registers (2 characters each), 1-125",
                            .default_value = "0",
                            .validator = IntInRange(0, modbus::kMaxRegistersPerRead)})
          .SectionLocation(&T::location);
  return o;
}

// The group's tags as the codec takes them, checked together: an impossible tag fails at its
// own line.
Status CheckGroup(GroupSettings& g) {
  g.codec_tags.clear();
  for (const TagSettings& t : g.tags) {
    g.codec_tags.push_back(modbus::Tag{.name = t.name,
                                       .area = t.area,
                                       .address = static_cast<uint16_t>(t.address),
                                       .type = t.type,
                                       .order = t.order,
                                       .scale = t.scale,
                                       .offset = t.offset,
                                       .length = static_cast<uint16_t>(t.length)});
  }
  if (g.tags.empty())
    return InvalidArgumentError(g.location + ": group \"" + g.name + "\" has no tags");
  size_t culprit = 0;
  Status s = modbus::CheckTags(g.codec_tags, &culprit);
  if (!s.ok()) {
    // An address past 65,535 is checked before the tag's width is known: with it, here.
    return InvalidArgumentError(
        fmt::format("{}: group \"{}\": {}", g.tags[culprit].location, g.name, s.message()));
  }
  return Status::Ok();
}

const Options<GroupSettings>& GroupOptions() {
  using G = GroupSettings;
  static const Options<G> o =
      Options<G>()
          .Add(&G::name, {.name = "name",
                          .doc = "the group's name (in the topic and the event)",
                          .required = true})
          .Int(&G::unit, {.name = "unit",
                          .doc = "unit id (slave address) of the device; several units may share "
                                 "one TCP gateway or serial line",
                          .default_value = "1",
                          .validator = IntInRange(0, 255)})
          .Add(&G::interval,
               {.name = "interval",
                .doc = "how often the group is polled (on a fixed schedule: a late "
                       "poll is counted missed, never bunched)",
                .default_value = "1s",
                .validator = DurationIn(std::chrono::milliseconds(10), std::chrono::hours(24),
                                        "must be 10ms to 24h")})
          .Enum(&G::report,
                {.name = "report",
                 .doc = "all: every tag every poll; changes: only tags whose value changed "
                        "(report by exception), all of them every heartbeat",
                 .default_value = "all"},
                {{"all", Report::kAll}, {"changes", Report::kChanges}})
          .Add(&G::heartbeat,
               {.name = "heartbeat",
                .doc = "with report: changes, every tag is sent at least this often",
                .default_value = "60s",
                .validator = DurationIn(std::chrono::milliseconds(10), std::chrono::hours(24 * 7),
                                        "must be 10ms to 7 days")})
          .SectionList(&G::tags, {.name = "tags", .doc = "the values read", .required = true},
                       TagOptions())
          .SectionLocation(&G::location);
  return o;
}

}  // namespace

Status Prepare(ModbusSettings& s, const Params& p) {
  if (s.groups.empty()) return InvalidArgumentError(p.Location("groups") + ": no poll groups");
  std::set<std::pair<std::string, int64_t>> seen;
  for (GroupSettings& g : s.groups) {
    if (!seen.emplace(g.name, g.unit).second) {
      return InvalidArgumentError(fmt::format(
          "{}: group \"{}\" of unit {} named twice (events of two groups would share a topic)",
          g.location, g.name, g.unit));
    }
    if (Status st = CheckGroup(g); !st.ok()) return st;
    for (size_t i = 0; i < g.codec_tags.size(); ++i) {
      const modbus::Tag& t = g.codec_tags[i];
      const bool bits = modbus::IsBitArea(t.area);
      const int64_t max = bits ? s.max_bits : s.max_registers;
      if (modbus::TagWidth(t) > max) {
        return InvalidArgumentError(fmt::format(
            "{}: tag \"{}\": a {} takes {} registers, more than one read may ask for "
            "(max_registers: {})",
            g.tags[i].location, t.name, modbus::TagTypeName(t.type), modbus::TagWidth(t), max));
      }
    }
  }
  if (s.endpoint.rtu) {
    for (const GroupSettings& g : s.groups) {
      if (g.unit == 0 || g.unit > 247) {
        return InvalidArgumentError(fmt::format(
            "{}: unit {}: on a serial line units are 1-247 (0 is broadcast, which is never "
            "answered)",
            p.Location("groups"), g.unit));
      }
    }
  }
  return Status::Ok();
}

Result<Endpoint> ParseEndpoint(const std::string& url) {
  Endpoint e;
  std::string_view u = url;
  if (u.starts_with("rtu:")) {
    e.rtu = true;
    e.device = std::string(u.substr(4));
    if (e.device.starts_with("//")) e.device = e.device.substr(2);
    if (e.device.empty() || e.device[0] != '/')
      return InvalidArgumentError("rtu: takes a serial device's path: rtu:/dev/ttyUSB0");
    return e;
  }
  if (!u.starts_with("tcp://"))
    return InvalidArgumentError("expected tcp://host[:port] or rtu:/dev/ttyX, got \"" + url + "\"");
  u.remove_prefix(6);
  if (!u.empty() && u.back() == '/') u.remove_suffix(1);
  std::string_view host = u;
  if (!u.empty() && u.front() == '[') {  // [::1]:502
    size_t close = u.find(']');
    if (close == std::string_view::npos)
      return InvalidArgumentError("unclosed [ in \"" + url + "\"");
    host = u.substr(1, close - 1);
    u.remove_prefix(close + 1);
    if (!u.empty() && u.front() != ':') return InvalidArgumentError("bad address \"" + url + "\"");
  } else if (size_t colon = u.rfind(':'); colon != std::string_view::npos) {
    host = u.substr(0, colon);
    u.remove_prefix(colon);
  } else {
    u = {};
  }
  if (!u.empty()) {  // ":port"
    u.remove_prefix(1);
    unsigned port = 0;
    auto [end, ec] = std::from_chars(u.data(), u.data() + u.size(), port);
    if (ec != std::errc() || end != u.data() + u.size() || port == 0 || port > 65535)
      return InvalidArgumentError("bad port in \"" + url + "\"");
    e.port = static_cast<uint16_t>(port);
  }
  if (host.empty()) return InvalidArgumentError("no host in \"" + url + "\"");
  e.host = std::string(host);
  return e;
}

const Options<ModbusSettings>& ModbusOptions() {
  using S = ModbusSettings;
  static const Options<S> o =
      Options<S>()
          .Parse(&S::endpoint,
                 {.name = "url",
                  .doc = "tcp://host[:port] (a device or gateway; port 502 by default) or "
                         "rtu:/dev/ttyUSB0 (a serial line)",
                  .required = true},
                 std::function<Result<Endpoint>(const std::string&)>(ParseEndpoint))
          .Int(&S::baud, {.name = "baud",
                          .doc = "rtu: bits per second",
                          .default_value = "9600",
                          .validator = IntInRange(300, 4000000)})
          .Enum(&S::parity,
                {.name = "parity",
                 .doc = "rtu: even (the specification's default), odd or none",
                 .default_value = "even"},
                {{"even", Parity::kEven}, {"odd", Parity::kOdd}, {"none", Parity::kNone}})
          .Int(&S::stop_bits, {.name = "stop_bits",
                               .doc = "rtu: 1, or 2 (the specification's rule with parity none)",
                               .default_value = "1",
                               .validator = IntInRange(1, 2)})
          .Add(&S::timeout,
               {.name = "timeout",
                .doc = "how long one request waits for its answer (and a TCP "
                       "connect for the connection)",
                .default_value = "1s",
                .validator = DurationIn(std::chrono::milliseconds(10), std::chrono::minutes(1),
                                        "must be 10ms to 1m")})
          .Int(&S::retries, {.name = "retries",
                             .doc = "a request that timed out, was garbled or lost its "
                                    "connection is sent again this many times within the poll",
                             .default_value = "2",
                             .validator = IntInRange(0, 10)})
          .Add(&S::retry_backoff,
               {.name = "retry_backoff",
                .doc = "wait before the first retry, doubled for each next one",
                .default_value = "50ms",
                .validator = DurationIn(std::chrono::nanoseconds(0), std::chrono::seconds(10),
                                        "must be 0 to 10s")})
          .Add(&S::reconnect_max,
               {.name = "reconnect_max",
                .doc = "after a failed connect the next is tried no sooner than 100 ms, doubled "
                       "per failure up to this; polls due meanwhile are counted missed",
                .default_value = "5s",
                .validator = DurationIn(std::chrono::milliseconds(100), std::chrono::minutes(10),
                                        "must be 100ms to 10m")})
          .Int(&S::max_registers,
               {.name = "max_registers",
                .doc = "registers one read may ask for (125, the protocol's limit; lower for "
                       "devices that need it)",
                .default_value = "125",
                .validator = IntInRange(1, modbus::kMaxRegistersPerRead)})
          .Int(&S::max_bits, {.name = "max_bits",
                              .doc = "coils or discrete inputs one read may ask for (2000 max)",
                              .default_value = "2000",
                              .validator = IntInRange(1, modbus::kMaxBitsPerRead)})
          .Int(&S::max_gap, {.name = "max_gap",
                             .doc = "unused registers one read may span to serve tags on both "
                                    "sides (0: only adjacent tags share a read; devices that "
                                    "refuse unmapped addresses need 0)",
                             .default_value = "0",
                             .validator = IntInRange(0, modbus::kMaxBitsPerRead)})
          .Add(&S::topic, {.name = "topic",
                           .doc = "topic of each event; {unit} and {group} are replaced",
                           .default_value = "modbus/{unit}/{group}"})
          .SectionList(&S::groups,
                       {.name = "groups",
                        .doc = "poll groups: tags read together at one interval from one unit",
                        .required = true},
                       GroupOptions());
  return o;
}

}  // namespace seedance::sources::modbus_source
