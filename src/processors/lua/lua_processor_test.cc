#include "processors/lua/lua_processor.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "governor/memory_budget.h"
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
  observe::Counter& Reloads(const char* result) {
    return harness_.metrics.GetCounter("seedance_lua_reloads_total", "",
                                       {{"component", "lua"}, {"result", result}});
  }
  observe::Counter& Exceeded(const char* limit) {
    return harness_.metrics.GetCounter("seedance_lua_budget_exceeded_total", "",
                                       {{"component", "lua"}, {"limit", limit}});
  }
  observe::Counter& StateResets() {
    return harness_.metrics.GetCounter("seedance_lua_state_resets_total", "",
                                       {{"component", "lua"}});
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

// A payload over 64 KiB goes to Lua straight from its text (no document unless the script
// changes it). Both paths must give the same results: the same events, the original bytes
// when unchanged, the original key order when changed.
TEST_F(LuaProcessorTest, LargePayloadsBehaveLikeSmallOnes) {
  auto p = Make(R"(code: |
  function process(event)
    local pl = event.payload
    if pl.mode == "keep" then return event end
    if pl.mode == "drop" then return nil end
    if pl.mode == "touch" then pl.list[1] = pl.list[1] end  -- same value: unchanged
    if pl.mode == "edit" then pl.n = pl.n + 1; pl.added = #pl.list end
    return event
  end
)");
  const auto payload = [](const std::string& mode, size_t pad) {
    // Spacing, key order, a duplicate-free object, numbers as written: what only the
    // original bytes keep.
    return "{ \"z\": 1.50, \"mode\": \"" + mode + "\", \"n\": 7, \"nul\": null, " +
           "\"list\": [1, 2.5e3, true, {\"a\": []}, \"" + std::string(pad, 'x') + "\"], " +
           "\"a\": {} }";
  };
  for (const size_t pad : {size_t{10}, size_t{100000}}) {
    SCOPED_TRACE(pad);
    RecordingOutput out;
    for (const char* mode : {"keep", "touch", "drop", "edit"})
      p->Process(JsonEvent(payload(mode, pad)), out);
    ASSERT_EQ(out.main.size(), 3u);
    EXPECT_TRUE(out.side.empty());
    EXPECT_EQ(out.main[0].payload, payload("keep", pad));
    EXPECT_EQ(out.main[1].payload, payload("touch", pad));
    const std::string& edited = out.main[2].payload;
    EXPECT_EQ(edited.substr(0, 35), R"({"z":1.5,"mode":"edit","n":8,"nul":)")
        << edited.substr(0, 80);
    EXPECT_NE(edited.find(R"("a":{},"added":5})"), std::string::npos)
        << edited.substr(edited.size() - 40);
  }
}

TEST_F(LuaProcessorTest, ALargePayloadWithARepeatedKeyIsWrittenAgainNotKept) {
  // {"k":1,"k":2} reads as one key in Lua: the event is not what the text says, so it is
  // written from the table (as for a small payload), not passed on as the original bytes.
  auto p = Make(kSeedFilter);
  const std::string big =
      "{\"temperature\": 20, \"k\": 1, \"k\": 2, \"pad\": \"" + std::string(100000, 'p') + "\"}";
  RecordingOutput out;
  p->Process(JsonEvent(big), out);
  ASSERT_EQ(out.main.size(), 1u);
  EXPECT_NE(out.main[0].payload, big);
  EXPECT_NE(out.main[0].payload.find(R"("k":2)"), std::string::npos);
}

// The Lua table of a large payload is built from the reader's events: the memory limit is
// reached in the middle of the parse, and the error must unwind it (no panic, no leak of
// the reader's state into the next event).
TEST_F(LuaProcessorTest, TheMemoryLimitReachedWhileBuildingALargePayloadCostsOnlyThatEvent) {
  auto p = Make(std::string("max_memory: 1MiB\n") + kSeedFilter);
  std::string big = "{\"temperature\": 20, \"r\": [";
  for (int i = 0; i < 100000; ++i) big += (i ? ",{\"id\":" : "{\"id\":") + std::to_string(i) + "}";
  big += "]}";
  RecordingOutput out;
  for (int round = 0; round < 3; ++round) {
    p->Process(JsonEvent(big), out);
    p->Process(JsonEvent(R"({"temperature": 21})"), out);
  }
  ASSERT_EQ(out.side.size(), 3u);
  EXPECT_NE(out.side[0].reason.find("memory limit"), std::string::npos) << out.side[0].reason;
  EXPECT_EQ(out.main.size(), 3u);
}

TEST_F(LuaProcessorTest, ALargeInvalidPayloadGoesToErrorWithTheReason) {
  auto p = Make(kSeedFilter);
  RecordingOutput out;
  p->Process(JsonEvent("{\"temperature\": 20, \"pad\": \"" + std::string(100000, 'p') + "\""), out);
  p->Process(JsonEvent(R"({"temperature": 20})"), out);
  ASSERT_EQ(out.side.size(), 1u);
  EXPECT_NE(out.side[0].reason.find("invalid JSON at offset"), std::string::npos)
      << out.side[0].reason;
  EXPECT_EQ(out.main.size(), 1u);
}

TEST_F(LuaProcessorTest, ANamedOutputLabelsTheEventAndAnUndeclaredOneIsAnError) {
  auto p = Make(R"(outputs: [alerts]
code: |
  function process(event)
    local t = event.payload.t
    if t > 100 then return event, "alerts" end
    if t > 50 then return event, "nowhere" end
    if t > 40 then return event, 42 end
    if t > 30 then return {event, event}, "alerts" end
    if t > 20 then return event, "main" end
    return event
  end
)");
  RecordingOutput out;
  for (int t : {150, 60, 45, 35, 25, 10}) {
    Event e = JsonEvent("{\"t\": " + std::to_string(t) + "}");
    if (t == 25) e.SetHeader("output", "alerts");  // a stale label is cleared for main
    p->Process(std::move(e), out);
  }
  ASSERT_EQ(out.main.size(), 5u);
  EXPECT_EQ(*out.main[0].FindHeader("output"), "alerts");
  EXPECT_EQ(*out.main[1].FindHeader("output"), "alerts");  // both of the list
  EXPECT_EQ(*out.main[2].FindHeader("output"), "alerts");
  EXPECT_EQ(out.main[3].FindHeader("output"), nullptr);  // "main"
  EXPECT_EQ(out.main[4].FindHeader("output"), nullptr);
  ASSERT_EQ(out.side.size(), 2u);
  EXPECT_EQ(out.side[0].output, Output::kError);
  EXPECT_NE(out.side[0].reason.find("returned output \"nowhere\", which is not one of this "
                                    "processor's outputs: [alerts]"),
            std::string::npos)
      << out.side[0].reason;
  EXPECT_NE(out.side[1].reason.find("returned a number as the output"), std::string::npos)
      << out.side[1].reason;
  // Declared names are checked.
  EXPECT_TRUE(ValidateNamedOutput("alerts_2").ok());
  for (const char* bad : {"main", "rejected", "Alerts", "a b", "", "9x"}) {
    EXPECT_FALSE(ValidateNamedOutput(bad).ok()) << bad;
  }
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

TEST_F(LuaProcessorTest, NumbersAreWrittenInTheShortestFormThatReadsBackTheSame) {
  auto p = Make(R"(code: |
  function process(e)
    e.payload = {a = 0.1 + 0.2, b = 1 / 3, c = 1e300, d = -2.5e-8, e = 2^53, f = -0.0, g = 1e15 + 0.5}
    return e
  end)");
  RecordingOutput out;
  p->Process(JsonEvent(R"({})"), out);
  ASSERT_EQ(out.main.size(), 1u);
  const std::string& json = out.main[0].payload;
  for (const char* expected :
       {"\"a\":0.30000000000000004", "\"b\":0.3333333333333333", "\"c\":1e+300", "\"d\":-2.5e-08",
        "\"e\":9007199254740992", "\"f\":0", "\"g\":1000000000000000.5"}) {
    EXPECT_NE(json.find(expected), std::string::npos) << expected << " not in " << json;
  }
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
  EXPECT_NE(out.side[0].reason.find("no field payload"), std::string::npos) << out.side[0].reason;
  EXPECT_NE(out.side[1].reason.find("instruction limit"), std::string::npos) << out.side[1].reason;
  EXPECT_NE(out.side[2].reason.find("no field topic"), std::string::npos) << out.side[2].reason;
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
  auto& ok = Reloads("ok");
  auto& failed = Reloads("failed");
  RecordingOutput out;
  int64_t now = 1;
  // The reloader loads on its own thread; the processing thread takes the result in Tick.
  auto wait_for = [&](observe::Counter& c, uint64_t n) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (c.Value() < n && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_GE(c.Value(), n);
    p->Tick(now += 10'000'000, out);
  };
  p->Process(JsonEvent("{}"), out);
  write("function process(e) e.payload.v = 2 return e end");
  wait_for(ok, 1);
  p->Process(JsonEvent("{}"), out);
  write("function process(e) e.payload.v = ");  // broken
  wait_for(failed, 1);
  p->Process(JsonEvent("{}"), out);
  ASSERT_EQ(out.main.size(), 3u);
  EXPECT_EQ(out.main[0].payload, R"({"v":1})");
  EXPECT_EQ(out.main[1].payload, R"({"v":2})");
  EXPECT_EQ(out.main[2].payload, R"({"v":2})");
  // A script path that turns into a device (here a link to /dev/zero) read for ever and
  // wedged the processing thread; now the reload is refused, and off the processing thread.
  std::filesystem::remove(path);
  std::filesystem::create_symlink("/dev/zero", path);
  wait_for(failed, 2);
  p->Process(JsonEvent("{}"), out);
  ASSERT_EQ(out.main.size(), 4u);
  EXPECT_EQ(out.main[3].payload, R"({"v":2})");
  EXPECT_EQ(ok.Value(), 1u);
  std::filesystem::remove_all(dir);
}

// A new version whose top-level code runs until its limit is loaded on the reloader's thread:
// events keep flowing through the old version meanwhile.
TEST_F(LuaProcessorTest, ASlowNewVersionDoesNotStopTheEvents) {
  auto dir = std::filesystem::temp_directory_path() / ("lua_slow_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto path = (dir / "f.lua").string();
  std::ofstream(path) << "function process(e) return e end";
  auto p = Make("script: " + path + "\nreload_check: 1ms\nmax_time: 1s\ninstruction_limit: 0");
  std::ofstream(path + ".tmp") << "local t = os.clock() while os.clock() - t < 5 do end\n"
                                  "function process(e) return e end";
  std::filesystem::rename(path + ".tmp", path);
  RecordingOutput out;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 200; ++i) {
    p->Tick(i * 1'000'000, out);
    p->Process(JsonEvent("{}"), out);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(out.main.size(), 200u);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(900));
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (Reloads("failed").Value() < 1 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(Reloads("failed").Value(), 1u);  // its top-level code ran out of time
  p.reset();
  std::filesystem::remove_all(dir);
}

// One call of a hostile script: the event goes to error with the limit's reason, the limit is
// counted, and the next event is processed by the same processor.
struct HostileCase {
  const char* name;
  const char* body;    // the body of process(e)
  const char* reason;  // part of the error reason
  const char* limit;   // the seedance_lua_budget_exceeded_total label, or "" for none
};

class LuaHostileTest : public LuaProcessorTest,
                       public ::testing::WithParamInterface<HostileCase> {};

TEST_P(LuaHostileTest, CostsOneEventAndTheNextOneFlows) {
  const HostileCase& c = GetParam();
  // max_time is only a safety net here (each case ends by its own limit), long enough not to
  // end a case first on a loaded machine.
  auto p = Make(std::string("max_time: 5s\nmax_memory: 16MiB\ncode: |\n") +
                "  function process(e)\n    if e.payload.evil then\n      " + c.body +
                "\n    end\n    return e\n  end\n");
  RecordingOutput out;
  auto t0 = std::chrono::steady_clock::now();
  p->Process(JsonEvent(R"({"evil":true})"), out);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  ASSERT_EQ(out.side.size(), 1u);
  EXPECT_NE(out.side[0].reason.find(c.reason), std::string::npos) << out.side[0].reason;
  if (*c.limit != '\0') {
    EXPECT_EQ(Exceeded(c.limit).Value(), 1u);
  }
  p->Process(JsonEvent(R"({"evil":false})"), out);
  ASSERT_EQ(out.main.size(), 1u);
  EXPECT_EQ(out.main[0].payload, R"({"evil":false})");
}

INSTANTIATE_TEST_SUITE_P(
    Scripts, LuaHostileTest,
    ::testing::Values(
        HostileCase{"runaway", "while true do end", "instruction limit", "instructions"},
        HostileCase{"pcall_swallows_budget",
                    "while true do pcall(function() while true do end end) end",
                    "instruction limit", "instructions"},
        HostileCase{"catch_and_return", "pcall(function() while true do end end) return e",
                    "instruction limit", "instructions"},
        HostileCase{"xpcall_handler_loops",
                    "xpcall(function() while true do end end, function() while true do end end)"
                    " return e",
                    "instruction limit", "instructions"},
        HostileCase{"coroutine_swallows",
                    "while true do coroutine.resume(coroutine.create(function() while true do "
                    "end end)) end",
                    "instruction limit", "instructions"},
        HostileCase{"backtracking_find",
                    "string.find(string.rep('a', 40), string.rep('a*', 25) .. 'b')", "limit",
                    "instructions"},
        HostileCase{"quadratic_find", "string.find(string.rep('a', 1e6), '.-b')", "limit",
                    "instructions"},
        HostileCase{"backtracking_gmatch",
                    "for x in string.gmatch(string.rep('a', 40), string.rep('a*', 25) .. 'b') "
                    "do end",
                    "limit", "instructions"},
        HostileCase{"long_date_format", "os.date(string.rep('%c', 1e6))", "os.date: format", ""},
        HostileCase{"huge_gsub", "string.rep('a', 1e7):gsub('a', 'aaaaaaaaaa')", "memory limit",
                    "memory"},
        HostileCase{"huge_rep", "local s = string.rep('x', 2^30)", "string.rep", ""},
        HostileCase{"table_of_strings",
                    "local t = {} for i = 1, 1e9 do t[i] = tostring(i) .. 'padding-padding' end",
                    "memory limit", "memory"},
        HostileCase{"caught_memory_error",
                    "pcall(function() local t = {} for i = 1, 1e9 do t[i] = {} end end) return e",
                    "memory limit", "memory"},
        HostileCase{"stop_the_collector", "collectgarbage('stop')", "not allowed", ""},
        HostileCase{"fan_out",
                    "local l = {} for i = 1, 20000 do l[i] = {payload = {}} end "
                    "return l",
                    "max_events_per_call", "events"},
        HostileCase{"amplified_output",
                    "local s = string.rep('x', 1e6) local l = {} for i = 1, 100 do "
                    "l[i] = {payload = {s = s}} end return l",
                    "larger than", ""},
        HostileCase{"time_string", "e.time = 'yesterday'", "event.time must be a number", ""},
        HostileCase{"table_topic", "e.topic = {}", "event.topic must be a string", ""},
        HostileCase{"number_headers", "e.headers = 5", "event.headers must be a table", ""},
        HostileCase{"header_value_number", "e.headers = {n = 5}",
                    "event.headers[\"n\"] must be a string", ""},
        HostileCase{"header_nul", "e.headers = {n = 'a\\0b'}", "contains a NUL", ""},
        HostileCase{"payload_nan", "e.payload.v = 0/0", "event.payload.v: NaN", ""},
        HostileCase{"payload_inf", "e.payload.list = {1, 1/0}", "event.payload.list[2]: infinity",
                    ""}),
    [](const ::testing::TestParamInfo<HostileCase>& info) { return info.param.name; });

// With the instruction limit off, the matcher's own clock checks (every 4,096 steps) end a
// backtracking pattern at max_time; the state's heap is published as a gauge.
TEST_F(LuaProcessorTest, PatternMatchingStopsAtTheTimeLimitAndMemoryIsAGauge) {
  auto p = Make(R"lua(instruction_limit: 0
max_time: 200ms
code: |
  kept = string.rep("k", 2 * 1024 * 1024)
  function process(e)
    if e.payload.evil then string.find(string.rep("a", 40), string.rep("a*", 25) .. "b") end
    return e
  end
)lua");
  RecordingOutput out;
  auto t0 = std::chrono::steady_clock::now();
  p->Process(JsonEvent(R"({"evil":true})"), out);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
  ASSERT_EQ(out.side.size(), 1u);
  EXPECT_NE(out.side[0].reason.find("time limit of 200 ms exceeded"), std::string::npos)
      << out.side[0].reason;
  EXPECT_EQ(Exceeded("time").Value(), 1u);
  EXPECT_GE(
      harness_.metrics.GetGauge("seedance_lua_memory_bytes", "", {{"component", "lua"}}).Value(),
      2 << 20);
}

// A script that keeps what it sees fills its state; at the memory limit the event fails and
// the state is replaced by a fresh one (counted), after which events flow again.
TEST_F(LuaProcessorTest, AStateThatKeepsGrowingIsReplaced) {
  auto p = Make(R"(max_memory: 4MiB
code: |
  kept = {}
  function process(e)
    kept[#kept + 1] = string.rep("x", 1000) .. #kept
    return e
  end
)");
  RecordingOutput out;
  for (int i = 0; i < 6000; ++i) p->Process(JsonEvent("{}"), out);
  ASSERT_GE(out.side.size(), 1u);
  EXPECT_NE(out.side[0].reason.find("memory limit of 4 MiB exceeded"), std::string::npos)
      << out.side[0].reason;
  EXPECT_GE(StateResets().Value(), 1u);
  EXPECT_EQ(out.main.size() + out.side.size(), 6000u);
  EXPECT_GT(out.main.size(), 5000u);
}

// Lua memory counts toward limits.memory: the state's heap is charged to the budget.
TEST_F(LuaProcessorTest, ScriptMemoryIsChargedToTheBudget) {
  governor::MemoryBudget budget(governor::MemoryBudgetOptions{.capacity = 64 << 20},
                                harness_.metrics);
  auto ctx = harness_.Context("lua");
  ctx.memory = &budget;
  auto p = LuaProcessorFactory().create(
      ProcessorParams("lua",
                      "code: |\n  big = string.rep('x', 8 * 1024 * 1024)\n"
                      "  function process(e) return e end\n"),
      ctx);
  ASSERT_TRUE(p.has_value()) << p.error().message();
  EXPECT_GE(budget.used(), 8u << 20);
  p->reset();
  EXPECT_EQ(budget.used(), 0u);
}

TEST_F(LuaProcessorTest, PatternsKeepLuaSemantics) {
  auto p = Make(R"lua(code: |
  function process(e)
    local r = {}
    r[#r+1] = table.concat({string.find("hello world", "o w")}, ",")
    r[#r+1] = table.concat({string.find("hello world", "(o)%s(w)")}, ",")
    r[#r+1] = table.concat({string.find("a.b", ".", 1, true)}, ",")
    r[#r+1] = string.match("key=value", "(%w+)=(%w+)")
    r[#r+1] = select(2, string.match("key=value", "(%w+)=(%w+)"))
    r[#r+1] = tostring(string.match("  x", "()x"))
    r[#r+1] = string.match("THE (quick) fox", "%((%a+)%)")
    r[#r+1] = string.match("f(a(b)c)d", "%b()")
    r[#r+1] = string.gsub("hello world", "o", "0")
    r[#r+1] = string.gsub("hello", "", "-")
    r[#r+1] = string.gsub("abc", "%w", "%0%0")
    r[#r+1] = string.gsub("$name is $age", "%$(%w+)", {name = "bob", age = 3})
    r[#r+1] = string.gsub("a b", "%w", function(c) return c:upper() end)
    r[#r+1] = string.gsub("abc", "^a", "x")
    r[#r+1] = string.gsub("THE (quick) fox", "%f[%a]%a+", "W")
    local words = {}
    for k, v in string.gmatch("a=1, b=2", "(%w+)=(%w+)") do words[#words+1] = k .. v end
    r[#r+1] = table.concat(words, ";")
    r[#r+1] = tostring(string.find("abc", "b", -1))
    r[#r+1] = ("x"):rep(3, ",")
    r[#r+1] = tostring(("aaa"):find("a-", 2))
    r[#r+1] = string.match("2024-01-02", "^(%d+)-(%d%d)-(%d%d)$")
    r[#r+1] = tostring(string.match("[x]", "[]]"))
    r[#r+1] = string.gsub("abcabc", "(b)(c)", "%2%1", 1)
    r[#r+1] = tostring(pcall(string.find, "a", "%"))
    r[#r+1] = tostring(pcall(string.find, "a", "[a"))
    r[#r+1] = tostring(pcall(string.rep, "x", 2^40))
    e.payload.r = r
    return e
  end
)lua");
  RecordingOutput out;
  p->Process(JsonEvent("{}"), out);
  ASSERT_EQ(out.main.size(), 1u) << (out.side.empty() ? "" : out.side[0].reason);
  EXPECT_EQ(out.main[0].payload,
            R"js({"r":["5,7","5,7,o,w","2,2","key","value","3","quick","(a(b)c)",)js"
            R"js("hell0 w0rld","-h-e-l-l-o-","aabbcc","bob is 3","A B","xbc",)js"
            R"js("W (W) W","a1;b2","nil","x,x,x","2","2024","]","acbabc","false","false",)js"
            R"js("false"]})js");
}

}  // namespace
}  // namespace seedance::processors
