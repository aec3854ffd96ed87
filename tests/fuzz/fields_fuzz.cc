// Fuzz target for the fields processor (processors/fields): any bytes as a JSON payload through
// every operation at once, on paths that meet, overlap and go through non-objects. Each event
// comes out exactly once (main or error); what leaves on the main output is a JSON object that
// the payload check takes, and an event left unchanged keeps its bytes.
#include <cstdlib>
#include <memory>
#include <string>

#include "fuzz/fuzz_target.h"
#include "processors/fields/fields_processor.h"
#include "testing/plugin_harness.h"
#include "util/json_check.h"

namespace {

constexpr const char* kOperations = R"(rename: {a: b.c, "x.y": a, b: "a.b.c"}
remove: ["b.d", z, "a.b.c.d"]
keep: [a, "b.c", "x", "x.y.z", q]
set: {"x.y": 1, "b.c.e": '{"k":[1,2]}', a: text, "q.r.s": 'null'}
)";

struct Fields {
  seedance::testing::Harness harness;
  std::unique_ptr<seedance::Processor> processor;
  Fields() {
    auto ctx = harness.Context("fields");
    auto made = seedance::processors::FieldsProcessorFactory().create(
        seedance::testing::ProcessorParams("fields", kOperations), ctx);
    if (!made) std::abort();
    processor = std::move(made).value();
  }
};

}  // namespace

SEEDANCE_FUZZ_TARGET(fields) {
  static Fields* fields = new Fields();
  const std::string input(reinterpret_cast<const char*>(data), size);
  seedance::testing::RecordingOutput out;
  fields->processor->Process(seedance::testing::JsonEvent(input), out);
  if (out.main.size() + out.side.size() != 1) seedance::fuzz::Fail("fields", "not one", input);
  for (const seedance::Event& e : out.main) {
    rapidjson::Document doc;
    if (!seedance::ParseJson(e.payload, doc).ok() || !doc.IsObject()) {
      seedance::fuzz::Fail("fields", "not a JSON object out", input);
    }
  }
  if (!out.side.empty() && seedance::CheckJson(input).ok()) {
    rapidjson::Document doc;
    if (seedance::ParseJson(input, doc).ok() && doc.IsObject() &&
        out.side[0].reason.find("is not an object") == std::string::npos) {
      seedance::fuzz::Fail("fields", "an object refused for another reason", input);
    }
  }
  return 0;
}
