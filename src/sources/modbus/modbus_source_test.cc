#include <gtest/gtest.h>

#include "config/config.h"
#include "plugins/builtin_plugins.h"
#include "sources/modbus/modbus_settings.h"
#include "sources/modbus/poll_group.h"
#include "sources/modbus/transport.h"

namespace seedance::sources::modbus_source {
namespace {

TEST(ModbusEndpoint, ParsesTcpAndRtuAndRefusesTheRest) {
  auto e = ParseEndpoint("tcp://10.0.0.5");
  ASSERT_TRUE(e.has_value());
  EXPECT_FALSE(e->rtu);
  EXPECT_EQ(e->host, "10.0.0.5");
  EXPECT_EQ(e->port, 502);
  e = ParseEndpoint("tcp://[::1]:5020");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->host, "::1");
  EXPECT_EQ(e->port, 5020);
  e = ParseEndpoint("rtu:/dev/ttyUSB0");
  ASSERT_TRUE(e.has_value());
  EXPECT_TRUE(e->rtu);
  EXPECT_EQ(e->device, "/dev/ttyUSB0");
  for (const char* bad : {"tcp://", "tcp://h:0", "tcp://h:70000", "tcp://h:5x", "udp://h",
                          "rtu:ttyUSB0", "tcp://[::1"}) {
    EXPECT_FALSE(ParseEndpoint(bad).has_value()) << bad;
  }
}

Result<ModbusSettings> LoadModbus(const std::string& source) {
  PluginRegistry registry;
  RegisterBuiltinPlugins(registry);
  auto config =
      config::LoadConfigText("sources:\n  - type: modbus\n" + source + "sinks:\n  - type: stdout\n",
                             "m.yaml", registry, [](const std::string&) { return std::nullopt; });
  if (!config) return config.error();
  const Params& p = config->sources.at(0).params;
  SEEDANCE_ASSIGN_OR_RETURN(ModbusSettings s, ModbusOptions().Bind(p));
  SEEDANCE_RETURN_IF_ERROR(Prepare(s, p));
  return s;
}

TEST(ModbusSettingsTest, GroupsAndTagsBindWithDefaults) {
  auto s = LoadModbus(
      "    url: tcp://127.0.0.1:5020\n"
      "    groups:\n"
      "      - name: energy\n"
      "        interval: 250ms\n"
      "        tags:\n"
      "          - {name: v, address: 0, type: float32, order: CDAB}\n"
      "          - {name: on, area: coil, address: 3, type: bool}\n");
  ASSERT_TRUE(s.has_value()) << s.error().message();
  ASSERT_EQ(s->groups.size(), 1u);
  const GroupSettings& g = s->groups[0];
  EXPECT_EQ(g.unit, 1);
  EXPECT_EQ(g.interval, std::chrono::milliseconds(250));
  ASSERT_EQ(g.codec_tags.size(), 2u);
  EXPECT_EQ(g.codec_tags[0].order, modbus::WordOrder::kCDAB);
  EXPECT_EQ(g.codec_tags[1].area, modbus::Area::kCoils);
  EXPECT_EQ(g.tags[1].location, "m.yaml:9:13");
}

TEST(ModbusSettingsTest, ImpossibleTagsFailAtTheirLine) {
  auto s = LoadModbus(
      "    url: rtu:/dev/ttyS0\n"
      "    groups:\n"
      "      - name: g\n"
      "        unit: 0\n"
      "        tags:\n"
      "          - {name: v, address: 0}\n");
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().message().find("on a serial line units are 1-247"), std::string::npos);
  s = LoadModbus(
      "    url: tcp://h\n"
      "    groups:\n"
      "      - name: g\n"
      "        tags:\n"
      "          - {name: v, address: 0}\n"
      "      - name: g\n"
      "        tags:\n"
      "          - {name: v, address: 0}\n");
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().message().find("m.yaml:8:9: group \"g\" of unit 1 named twice"),
            std::string::npos)
      << s.error().message();
  s = LoadModbus(
      "    url: tcp://h\n"
      "    groups:\n"
      "      - name: g\n"
      "        tags:\n"
      "          - {name: v, address: 0}\n"
      "          - {name: w, address: 0, type: int16}\n");
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().message(),
            "m.yaml:8:13: group \"g\": tags \"v\" and \"w\" both start at holding_registers 0");
}

GroupSettings Group(Report report) {
  GroupSettings g;
  g.name = "g\"1";
  g.unit = 7;
  g.report = report;
  g.heartbeat = std::chrono::seconds(10);
  g.codec_tags = {modbus::Tag{.name = "a", .address = 0},
                  modbus::Tag{.name = "b", .address = 1, .type = modbus::TagType::kInt16}};
  return g;
}

TEST(ModbusPollGroup, PayloadHasEveryTagInOrder) {
  PollGroup g(Group(Report::kAll), modbus::PlanLimits{});
  ASSERT_EQ(g.reads().size(), 1u);
  g.SetAnswer(0, std::string("\x00\x05\xFF\xFE", 4));
  auto p = g.Payload(3, 42, std::chrono::steady_clock::now());
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(*p, R"({"unit":7,"group":"g\"1","seq":3,"time_ns":42,"values":{"a":5,"b":-2}})");
}

TEST(ModbusPollGroup, ReportByExceptionSendsChangesAndAHeartbeat) {
  PollGroup g(Group(Report::kChanges), modbus::PlanLimits{});
  const auto t0 = std::chrono::steady_clock::now();
  g.SetAnswer(0, std::string("\x00\x05\x00\x01", 4));
  auto p = g.Payload(0, 1, t0);  // the first poll: everything
  ASSERT_TRUE(p.has_value());
  EXPECT_NE(p->find(R"("values":{"a":5,"b":1})"), std::string::npos);
  g.Reported();
  EXPECT_FALSE(g.Payload(1, 2, t0 + std::chrono::seconds(1)).has_value());  // nothing changed
  g.SetAnswer(0, std::string("\x00\x05\x00\x02", 4));
  p = g.Payload(1, 3, t0 + std::chrono::seconds(2));
  ASSERT_TRUE(p.has_value());
  EXPECT_NE(p->find(R"("values":{"b":2})"), std::string::npos);
  // Not taken by the pipeline: the change is still a change next time.
  p = g.Payload(1, 4, t0 + std::chrono::seconds(3));
  ASSERT_TRUE(p.has_value());
  EXPECT_NE(p->find(R"("values":{"b":2})"), std::string::npos);
  g.Reported();
  EXPECT_FALSE(g.Payload(2, 5, t0 + std::chrono::seconds(9)).has_value());
  p = g.Payload(2, 6, t0 + std::chrono::seconds(10));  // the heartbeat: everything again
  ASSERT_TRUE(p.has_value());
  EXPECT_NE(p->find(R"("values":{"a":5,"b":2})"), std::string::npos);
}

TEST(ModbusReconnectBackoff, DoublesFrom100msUpToTheMaximum) {
  ReconnectBackoff b(std::chrono::milliseconds(500));
  const auto t = std::chrono::steady_clock::now();
  EXPECT_FALSE(b.Waiting(t));
  b.Failed(t);
  EXPECT_TRUE(b.Waiting(t + std::chrono::milliseconds(99)));
  EXPECT_FALSE(b.Waiting(t + std::chrono::milliseconds(100)));
  b.Failed(t);
  EXPECT_TRUE(b.Waiting(t + std::chrono::milliseconds(199)));
  b.Failed(t);
  b.Failed(t);
  EXPECT_TRUE(b.Waiting(t + std::chrono::milliseconds(499)));
  EXPECT_FALSE(b.Waiting(t + std::chrono::milliseconds(500)));  // capped
  b.Succeeded();
  EXPECT_FALSE(b.Waiting(t));
}

}  // namespace
}  // namespace seedance::sources::modbus_source
