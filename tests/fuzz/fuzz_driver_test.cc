// Runs every fuzz target (tests/fuzz/*_fuzz.cc) in the unit tests: first its seed corpus
// (tests/fuzz/corpus/<target>/, the files libFuzzer starts from too), then seeded mutations of
// those seeds — bit flips, cuts, repeats, splices — bounded in count and in time. A target
// aborts on a broken invariant; a crash fails the test binary. Deterministic per seed.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz/fuzz_target.h"

SEEDANCE_FUZZ_TARGET(mqtt_codec);
SEEDANCE_FUZZ_TARGET(mqtt_reader);
SEEDANCE_FUZZ_TARGET(json_check);
SEEDANCE_FUZZ_TARGET(json_lua);
SEEDANCE_FUZZ_TARGET(fields);
SEEDANCE_FUZZ_TARGET(lua_patterns);
SEEDANCE_FUZZ_TARGET(config);
SEEDANCE_FUZZ_TARGET(http_response);
SEEDANCE_FUZZ_TARGET(http_request);
SEEDANCE_FUZZ_TARGET(influx_write_error);
SEEDANCE_FUZZ_TARGET(modbus_codec);
SEEDANCE_FUZZ_TARGET(prometheus_text);
SEEDANCE_FUZZ_TARGET(protobuf_reader);
SEEDANCE_FUZZ_TARGET(otlp_request);

namespace seedance {
namespace {

using Target = int (*)(const uint8_t*, size_t);

void RunOne(Target target, const std::string& input) {
  // SEEDANCE_FUZZ_TRACE=FILE writes each input to FILE before it runs: after a crash or a
  // hang, FILE holds the input to blame.
  static const char* trace = std::getenv("SEEDANCE_FUZZ_TRACE");
  if (trace != nullptr) std::ofstream(trace, std::ios::binary | std::ios::trunc) << input;
  target(reinterpret_cast<const uint8_t*>(input.data()), input.size());
}

std::vector<std::string> Corpus(const std::string& name) {
  std::vector<std::string> out;
  const std::filesystem::path dir = std::filesystem::path(SEEDANCE_FUZZ_CORPUS) / name;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    out.push_back(ss.str());
  }
  return out;
}

std::string Mutate(const std::vector<std::string>& seeds, std::mt19937& rng) {
  std::string s = seeds[rng() % seeds.size()];
  const int edits = 1 + static_cast<int>(rng() % 6);
  for (int e = 0; e < edits; ++e) {
    const size_t at = s.empty() ? 0 : rng() % s.size();
    switch (rng() % 6) {
      case 0:  // flip a byte
        if (!s.empty()) s[at] = static_cast<char>(rng());
        break;
      case 1:  // cut
        s.resize(at);
        break;
      case 2:  // insert an interesting byte
        s.insert(at, 1, "\0\n\r\"\\[{}]:,-#&*\xff\x80"[rng() % 17]);
        break;
      case 3:  // repeat a chunk (nesting, long strings)
        if (!s.empty()) {
          const std::string chunk = s.substr(at, 1 + rng() % 8);
          for (int r = static_cast<int>(rng() % 64); r > 0; --r) s.insert(at, chunk);
        }
        break;
      case 4: {  // splice in part of another seed
        const std::string& other = seeds[rng() % seeds.size()];
        if (!other.empty()) s.insert(at, other.substr(rng() % other.size(), 1 + rng() % 32));
        break;
      }
      case 5:  // delete a range
        s.erase(at, rng() % 16);
        break;
    }
  }
  return s;
}

// The seeds, then up to `iterations` mutations or `budget` of time, whichever ends first.
void Fuzz(const std::string& name, Target target, int iterations,
          std::chrono::milliseconds budget = std::chrono::seconds(4)) {
  const std::vector<std::string> seeds = Corpus(name);
  ASSERT_GE(seeds.size(), 3u) << "seed corpus of " << name;
  for (const std::string& s : seeds) RunOne(target, s);
  std::mt19937 rng(20261130);
  const auto deadline = std::chrono::steady_clock::now() + budget;
  int done = 0;
  for (; done < iterations && std::chrono::steady_clock::now() < deadline; ++done) {
    RunOne(target, Mutate(seeds, rng));
  }
  ::testing::Test::RecordProperty("mutations", done);
}

TEST(FuzzTest, MqttCodecRandomBytesNeverCrashAndRoundTrip) {
  std::mt19937 rng(12345);
  std::uniform_int_distribution<int> len(0, 64), byte(0, 255);
  for (int i = 0; i < 200000; ++i) {
    std::string s(static_cast<size_t>(len(rng)), '\0');
    for (char& c : s) c = static_cast<char>(byte(rng));
    RunOne(SeedanceFuzz_mqtt_codec, s);
  }
}

TEST(FuzzTest, MqttCodec) { Fuzz("mqtt_codec", SeedanceFuzz_mqtt_codec, 100000); }
TEST(FuzzTest, MqttReader) { Fuzz("mqtt_reader", SeedanceFuzz_mqtt_reader, 50000); }
TEST(FuzzTest, JsonCheck) { Fuzz("json_check", SeedanceFuzz_json_check, 50000); }
TEST(FuzzTest, JsonToLuaAndBack) { Fuzz("json_lua", SeedanceFuzz_json_lua, 20000); }
TEST(FuzzTest, FieldsProcessor) { Fuzz("fields", SeedanceFuzz_fields, 50000); }
TEST(FuzzTest, LuaPatterns) { Fuzz("lua_patterns", SeedanceFuzz_lua_patterns, 20000); }
TEST(FuzzTest, ConfigLoader) { Fuzz("config", SeedanceFuzz_config, 5000); }
TEST(FuzzTest, HttpResponse) { Fuzz("http_response", SeedanceFuzz_http_response, 50000); }
TEST(FuzzTest, HttpRequest) { Fuzz("http_request", SeedanceFuzz_http_request, 20000); }
TEST(FuzzTest, PrometheusText) { Fuzz("prometheus_text", SeedanceFuzz_prometheus_text, 50000); }
TEST(FuzzTest, ProtobufReader) { Fuzz("protobuf_reader", SeedanceFuzz_protobuf_reader, 50000); }
TEST(FuzzTest, OtlpRequest) { Fuzz("otlp_request", SeedanceFuzz_otlp_request, 200000); }
TEST(FuzzTest, ModbusCodec) { Fuzz("modbus_codec", SeedanceFuzz_modbus_codec, 50000); }
#ifdef SEEDANCE_SINK_INFLUXDB
TEST(FuzzTest, InfluxWriteError) {
  Fuzz("influx_write_error", SeedanceFuzz_influx_write_error, 50000);
}
#endif

}  // namespace
}  // namespace seedance
