#include "processors/lua/lua_processor.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "testing/plugin_harness.h"

namespace seedance::processors {
namespace {

using seedance::testing::Harness;
using seedance::testing::JsonEvent;
using seedance::testing::ProcessorParams;
using seedance::testing::RecordingOutput;

class LuaProcessorTest : public ::testing::Test {
 protected:
  std::unique_ptr<Processor> Make(const std::string& yaml) {
    auto ctx = harness_.Context("lua");
    auto p = LuaProcessorFactory().create(ProcessorParams("lua", yaml), ctx);
    EXPECT_TRUE(p.has_value()) << (p ? "" : p.error().message());
    return p ? std::move(p).value() : nullptr;
  }
  Harness harness_;
};

constexpr const char* kSeedFilter = R"(code: |
  function process(event)
    local temp = tonumber(event.payload.temperature)
    if temp and temp >= -40 and temp <= 125 then
      return event
    end
    return nil
  end
)";

TEST_F(LuaProcessorTest, SeedFilterKeepsInRangeAndDropsTheRest) {
  auto p = Make(kSeedFilter);
  RecordingOutput out;
  p->Process(JsonEvent(R"({"temperature": 21.5, "id": 1})"), out);
  p->Process(JsonEvent(R"({"temperature": -41})"), out);
  p->Process(JsonEvent(R"({"temperature": "125"})"), out);
  p->Process(JsonEvent(R"({"humidity": 3})"), out);
  ASSERT_EQ(out.main.size(), 2u);
  EXPECT_EQ(out.main[0].payload, R"({"temperature": 21.5, "id": 1})");  // bytes untouched
  EXPECT_EQ(out.main[1].payload, R"({"temperature": "125"})");
  EXPECT_TRUE(out.side.empty());
}

// JSON nested 5,000 levels deep made the JSON→Lua bridge overflow Lua's stack outside a
// protected call (a LuaJIT panic: the process died). Now it is refused before the bridge.
TEST_F(LuaProcessorTest, DeeplyNestedPayloadsGoToErrorAndTheNextEventIsProcessed) {
  auto p = Make(kSeedFilter);
  RecordingOutput out;
  for (int depth : {5'000, 1'000'000}) {
    std::string deep(depth, '[');
    deep += std::string(depth, ']');
    p->Process(JsonEvent(deep), out);
  }
  // At the limit the payload reaches the script (an array: no temperature, filtered).
  p->Process(JsonEvent(std::string(128, '[') + std::string(128, ']')), out);
  p->Process(JsonEvent(R"({"temperature": 20})"), out);
  ASSERT_EQ(out.side.size(), 2u);
  for (const auto& side : out.side) {
    EXPECT_EQ(side.output, Output::kError);
    EXPECT_NE(side.reason.find("nested deeper than 128 levels"), std::string::npos) << side.reason;
  }
  ASSERT_EQ(out.main.size(), 1u);
}

// A script's event.time of NaN, ±inf, 1e300 or −1e18 was converted with undefined behaviour
// (the event left with time 1677-09-21T00:12:44.-854775Z). Now: error, with the reason.
TEST_F(LuaProcessorTest, OutOfRangeEventTimesGoToErrorWithTheReason) {
  auto p = Make(R"(code: |
  function process(e)
    local t = e.payload.t
    if t == "nan" then e.time = 0/0
    elseif t == "inf" then e.time = math.huge
    elseif t == "-inf" then e.time = -math.huge
    else e.time = tonumber(t) end
    return e
  end
)");
  RecordingOutput out;
  for (const char* t : {"nan", "inf", "-inf", "1e300", "-1e18"}) {
    p->Process(JsonEvent(std::string(R"({"t": ")") + t + R"("})"), out);
  }
  p->Process(JsonEvent(R"({"t": "1700000000.5"})"), out);
  ASSERT_EQ(out.side.size(), 5u);
  for (const auto& side : out.side) {
    EXPECT_EQ(side.output, Output::kError);
    EXPECT_NE(side.reason.find("event.time must be seconds since 1970"), std::string::npos)
        << side.reason;
  }
  ASSERT_EQ(out.main.size(), 1u);
  EXPECT_EQ(out.main[0].event_time_ns, 1'700'000'000'500'000'000);
}

TEST_F(LuaProcessorTest, ChangedPayloadIsReserializedKeepingKeyOrder) {
  auto p = Make(R"(code: |
  function process(e)
    e.payload.temperature = e.payload.temperature * 9 / 5 + 32
    e.payload.unit = "F"
    e.topic = "converted/" .. e.topic
    return e
  end)");
  RecordingOutput out;
  p->Process(JsonEvent(R"({"z": true, "temperature": 100, "a": [1, 2.5, null], "o": {}})"), out);
  ASSERT_EQ(out.main.size(), 1u);
  EXPECT_EQ(out.main[0].payload,
            R"({"z":true,"temperature":212,"a":[1,2.5,null],"o":{},"unit":"F"})");
  EXPECT_EQ(out.main[0].topic, "converted/sensor/1/temperature");
}

TEST_F(LuaProcessorTest, ListResultFansOutAndEmptyListDrops) {
  auto p = Make(R"(code: |
  function process(e)
    if e.payload.n == 0 then return {} end
    local out = {}
    for i = 1, e.payload.n do out[i] = { payload = { i = i }, topic = "split" } end
    return out
  end)");
  RecordingOutput out;
  p->Process(JsonEvent(R"({"n": 3})"), out);
  p->Process(JsonEvent(R"({"n": 0})"), out);
  ASSERT_EQ(out.main.size(), 3u);
  EXPECT_EQ(out.main[2].payload, R"({"i":3})");
  EXPECT_EQ(out.main[2].topic, "split");
}

TEST_F(LuaProcessorTest, ScriptErrorGoesToErrorOutputAndPipelineContinues) {
  auto p = Make(R"(code: |
  function process(e)
    if e.payload.boom then error("kaboom") end
    return e
  end)");
  RecordingOutput out;
  p->Process(JsonEvent(R"({"boom": 1})"), out);
  p->Process(JsonEvent(R"({"ok": 1})"), out);
  ASSERT_EQ(out.side.size(), 1u);
  EXPECT_EQ(out.side[0].output, Output::kError);
  EXPECT_NE(out.side[0].reason.find("kaboom"), std::string::npos);
  EXPECT_EQ(out.side[0].event.payload, R"({"boom": 1})");
  ASSERT_EQ(out.main.size(), 1u);
}

TEST_F(LuaProcessorTest, RunawayScriptHitsTheInstructionBudget) {
  auto p = Make(R"(instruction_limit: 100000
code: |
  function process(e)
    if e.payload.spin then while true do end end
    return e
  end)");
  RecordingOutput out;
  auto t0 = std::chrono::steady_clock::now();
  p->Process(JsonEvent(R"({"spin": true})"), out);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  p->Process(JsonEvent(R"({"spin": false})"), out);
  ASSERT_EQ(out.side.size(), 1u);
  EXPECT_NE(out.side[0].reason.find("instruction limit"), std::string::npos);
  EXPECT_EQ(out.main.size(), 1u);
}

// Reading what a script returned calls Lua (metamethods, serialisation): an error there was
// raised outside any protected call, and LuaJIT's panic ended the process.
TEST_F(LuaProcessorTest, ErrorsWhileReadingTheResultGoToErrorNotAPanic) {
  auto p = Make(R"(instruction_limit: 100000
code: |
  local raising = setmetatable({}, {__index = function(t, k) error("no field " .. k) end})
  local spinning = setmetatable({}, {__index = function() while true do end end})
  function process(e)
    if e.payload.kind == "raising" then return raising end
    if e.payload.kind == "spinning" then return spinning end
    if e.payload.kind == "list" then return {e, raising} end
    return e
  end)");
  RecordingOutput out;
  auto t0 = std::chrono::steady_clock::now();
  p->Process(JsonEvent(R"({"kind": "raising"})"), out);
  p->Process(JsonEvent(R"({"kind": "spinning"})"), out);
  p->Process(JsonEvent(R"({"kind": "list"})"), out);
  p->Process(JsonEvent(R"({"kind": "fine"})"), out);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  ASSERT_EQ(out.side.size(), 3u);
  EXPECT_NE(out.side[0].reason.find("no field payload"), std::string::npos)
      << out.side[0].reason;
  EXPECT_NE(out.side[1].reason.find("instruction limit"), std::string::npos)
      << out.side[1].reason;
  EXPECT_NE(out.side[2].reason.find("no field topic"), std::string::npos)
      << out.side[2].reason;
  // Nothing of the list was emitted: its second element failed.
  ASSERT_EQ(out.main.size(), 1u);
  EXPECT_EQ(out.main[0].payload, R"({"kind": "fine"})");
}

TEST_F(LuaProcessorTest, WrongReturnTypeIsAnError) {
  auto p = Make("code: 'function process(e) return 42 end'");
  RecordingOutput out;
  p->Process(JsonEvent("{}"), out);
  ASSERT_EQ(out.side.size(), 1u);
  EXPECT_NE(out.side[0].reason.find("returned a number"), std::string::npos);
}

TEST_F(LuaProcessorTest, SandboxHidesIoOsExecuteAndRequire) {
  auto p = Make(R"(code: |
  function process(e)
    e.payload.io = io == nil
    e.payload.exec = os.execute == nil
    e.payload.time = os.time ~= nil
    e.payload.req = require == nil
    e.payload.loadfile = loadfile == nil
    return e
  end)");
  RecordingOutput out;
  p->Process(JsonEvent("{}"), out);
  ASSERT_EQ(out.main.size(), 1u);
  EXPECT_EQ(out.main[0].payload,
            R"({"exec":true,"io":true,"loadfile":true,"req":true,"time":true})");
}

TEST_F(LuaProcessorTest, GrantsOpenWhatTheConfigAllows) {
  auto p = Make(R"(allow: [io, os]
code: |
  function process(e)
    e.payload.io = io ~= nil and os.execute ~= nil
    return e
  end)");
  RecordingOutput out;
  p->Process(JsonEvent("{}"), out);
  EXPECT_EQ(out.main.at(0).payload, R"({"io":true})");
}

TEST_F(LuaProcessorTest, RawPayloadReachesLuaAsAString) {
  auto p = Make(R"(code: |
  function process(e)
    e.payload = string.upper(e.payload)
    return e
  end)");
  RecordingOutput out;
  Event e = JsonEvent("hello");
  e.format = PayloadFormat::kRaw;
  p->Process(std::move(e), out);
  EXPECT_EQ(out.main.at(0).payload, "HELLO");
}

TEST_F(LuaProcessorTest, InvalidJsonGoesToErrorOutput) {
  auto p = Make("code: 'function process(e) return e end'");
  RecordingOutput out;
  p->Process(JsonEvent("{not json"), out);
  ASSERT_EQ(out.side.size(), 1u);
  EXPECT_NE(out.side[0].reason.find("invalid JSON"), std::string::npos);
}

TEST_F(LuaProcessorTest, CreateFailsForSyntaxErrorsAndMissingFunction) {
  Harness h;
  auto ctx = h.Context("lua");
  auto bad = LuaProcessorFactory().create(
      ProcessorParams("lua", "code: 'function process(e) return e'"), ctx);
  EXPECT_EQ(bad.error().code(), StatusCode::kInvalidArgument);
  auto missing = LuaProcessorFactory().create(ProcessorParams("lua", "code: 'x = 1'"), ctx);
  EXPECT_NE(missing.error().message().find("no function \"process\""), std::string::npos);
}

TEST_F(LuaProcessorTest, ReloadsAChangedFileAndKeepsTheOldOneWhenBroken) {
  auto dir = std::filesystem::temp_directory_path() / ("lua_reload_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto path = (dir / "f.lua").string();
  auto write = [&](const std::string& text) {
    std::ofstream(path + ".tmp") << text;
    std::filesystem::rename(path + ".tmp", path);
  };
  write("function process(e) e.payload.v = 1 return e end");
  auto p = Make("script: " + path + "\nreload_check: 1ms");
  RecordingOutput out;
  int64_t now = 1;
  p->Process(JsonEvent("{}"), out);
  write("function process(e) e.payload.v = 2 return e end");
  p->Tick(now += 10'000'000, out);
  p->Process(JsonEvent("{}"), out);
  write("function process(e) e.payload.v = ");  // broken
  p->Tick(now += 10'000'000, out);
  p->Process(JsonEvent("{}"), out);
  ASSERT_EQ(out.main.size(), 3u);
  EXPECT_EQ(out.main[0].payload, R"({"v":1})");
  EXPECT_EQ(out.main[1].payload, R"({"v":2})");
  EXPECT_EQ(out.main[2].payload, R"({"v":2})");
  // A script path that turns into a device (here a link to /dev/zero) read for ever and
  // wedged the processing thread; now the reload is refused at once.
  std::filesystem::remove(path);
  std::filesystem::create_symlink("/dev/zero", path);
  auto t0 = std::chrono::steady_clock::now();
  p->Tick(now += 10'000'000, out);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  p->Process(JsonEvent("{}"), out);
  ASSERT_EQ(out.main.size(), 4u);
  EXPECT_EQ(out.main[3].payload, R"({"v":2})");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace seedance::processors
