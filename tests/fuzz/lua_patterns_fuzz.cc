// Fuzz target for the Lua pattern matcher (processors/lua/lua_patterns.cc): the input is a
// pattern, a newline, then a subject; find, match, gmatch and gsub run on them in a script
// under small limits. A pattern may come from a payload, so the matcher must never crash,
// read out of bounds or run past its limits: every event comes out exactly once.
#include <cstdlib>
#include <memory>
#include <string>

#include "fuzz/fuzz_target.h"
#include "processors/lua/lua_processor.h"
#include "testing/plugin_harness.h"

namespace {

constexpr const char* kPatternScript = R"lua(instruction_limit: 200000
max_time: 200ms
max_memory: 8MiB
code: |
  function process(e)
    local cut = string.find(e.payload, "\n", 1, true) or #e.payload + 1
    local p, s = e.payload:sub(1, cut - 1), e.payload:sub(cut + 1)
    local n = 0
    pcall(string.find, s, p)
    pcall(string.find, s, p, 2)
    pcall(string.match, s, p, -3)
    pcall(function() for a in string.gmatch(s, p) do n = n + 1 if n > 50 then break end end end)
    pcall(string.gsub, s, p, "<%0>")
    pcall(string.gsub, s, p, {})
    pcall(string.gsub, s, p, function(x) return x end, 3)
    return e
  end
)lua";

struct Matcher {
  seedance::testing::Harness harness;
  std::unique_ptr<seedance::Processor> processor;
  Matcher() {
    auto ctx = harness.Context("lua");
    auto made = seedance::processors::LuaProcessorFactory().create(
        seedance::testing::ProcessorParams("lua", kPatternScript), ctx);
    if (!made) std::abort();
    processor = std::move(made).value();
  }
};

}  // namespace

SEEDANCE_FUZZ_TARGET(lua_patterns) {
  static Matcher* matcher = new Matcher();  // one Lua state, as in the pipeline
  seedance::Event event;
  event.format = seedance::PayloadFormat::kRaw;
  event.topic = "fuzz";
  event.payload.assign(reinterpret_cast<const char*>(data), size);
  seedance::testing::RecordingOutput out;
  matcher->processor->Process(std::move(event), out);
  if (out.main.size() + out.side.size() != 1) std::abort();
  return 0;
}
