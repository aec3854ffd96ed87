// Drives the MQTT codec fuzz target with seeded random bytes and with mutations of valid
// packets, so every CI run fuzzes a little even without libFuzzer.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "mqtt/codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace seedance::mqtt {
namespace {

std::vector<std::string> Seeds() {
  std::vector<std::string> out;
  Publish p{.topic = "sensor/1/temperature", .payload = "{\"t\":1}", .qos = 1, .packet_id = 7};
  p.props.push_back({.id = prop::kUserProperty, .text = "k", .value = "v"});
  Connect c{.version = Version::kV5, .client_id = "x", .username = "u", .password = "p"};
  c.will = Will{.topic = "w", .payload = "bye", .qos = 1};
  for (Version v : {Version::kV311, Version::kV5}) {
    for (const Packet& packet :
         std::vector<Packet>{p, c, Connack{.session_present = true}, PubResponse{.packet_id = 3},
                             Subscribe{.packet_id = 2, .subscriptions = {{"a/+/b", 1}}},
                             Suback{.packet_id = 2, .reasons = {1}}, PingReq{}, Disconnect{}}) {
      std::string s;
      if (Encode(packet, v, s).ok()) out.push_back(s);
    }
  }
  return out;
}

TEST(MqttCodecFuzzTest, RandomBytesNeverCrashAndRoundTrip) {
  std::mt19937 rng(12345);
  std::uniform_int_distribution<int> len(0, 64), byte(0, 255);
  for (int i = 0; i < 200000; ++i) {
    std::string s(static_cast<size_t>(len(rng)), '\0');
    for (char& c : s) c = static_cast<char>(byte(rng));
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  }
}

TEST(MqttCodecFuzzTest, MutatedValidPacketsNeverCrash) {
  std::mt19937 rng(777);
  auto seeds = Seeds();
  ASSERT_GT(seeds.size(), 10u);
  for (int i = 0; i < 100000; ++i) {
    std::string s = seeds[rng() % seeds.size()];
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips && !s.empty(); ++f) s[rng() % s.size()] = static_cast<char>(rng());
    if (rng() % 4 == 0 && !s.empty()) s.resize(rng() % s.size());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  }
}

}  // namespace
}  // namespace seedance::mqtt
