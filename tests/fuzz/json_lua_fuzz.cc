// Fuzz target for the JSON→Lua bridge and back (processors/lua): any bytes as a JSON payload
// through a script that walks and changes it. Each event must come out exactly once (main or
// error), and every payload that leaves on the main output must be valid JSON.
#include <cstdlib>
#include <memory>
#include <string>

#include "fuzz/fuzz_target.h"
#include "processors/lua/lua_processor.h"
#include "testing/plugin_harness.h"
#include "util/json_check.h"

namespace {

constexpr const char* kScript = R"(instruction_limit: 1000000
code: |
  local function walk(v, depth)
    if type(v) ~= "table" then return 1 end
    local n = 1
    for _, x in pairs(v) do n = n + walk(x, depth + 1) end
    return n
  end
  function process(e)
    if type(e.payload) == "table" then
      e.payload.walked = walk(e.payload, 0)
      e.topic = e.topic .. "/" .. tostring(#e.payload)
    end
    return e
  end
)";

struct Bridge {
  seedance::testing::Harness harness;
  std::unique_ptr<seedance::Processor> processor;
  Bridge() {
    auto ctx = harness.Context("lua");
    auto made = seedance::processors::LuaProcessorFactory().create(
        seedance::testing::ProcessorParams("lua", kScript), ctx);
    if (!made) std::abort();
    processor = std::move(made).value();
  }
};

}  // namespace

SEEDANCE_FUZZ_TARGET(json_lua) {
  static Bridge* bridge = new Bridge();  // one Lua state, as in the pipeline
  seedance::testing::RecordingOutput out;
  bridge->processor->Process(
      seedance::testing::JsonEvent(std::string(reinterpret_cast<const char*>(data), size)), out);
  if (out.main.size() + out.side.size() != 1) std::abort();
  for (const seedance::Event& e : out.main) {
    if (e.format == seedance::PayloadFormat::kJson && !seedance::CheckJson(e.payload).ok()) {
      std::abort();
    }
  }
  // The same JSON padded past 64 KiB takes the large-payload path (the Lua table built from the
  // text, no document unless changed): the same outcome, and the same bytes apart from the
  // padding.
  const std::string input(reinterpret_cast<const char*>(data), size);
  const std::string padded = input + std::string(70 * 1024, ' ');
  seedance::testing::RecordingOutput large;
  bridge->processor->Process(seedance::testing::JsonEvent(padded), large);
  if (large.main.size() != out.main.size() || large.side.size() != out.side.size()) std::abort();
  if (!out.main.empty()) {
    const std::string& a = out.main[0].payload;
    const std::string& b = large.main[0].payload;
    if (a != b && !(a == input && b == padded)) std::abort();  // both kept, or same text
  }
  return 0;
}
