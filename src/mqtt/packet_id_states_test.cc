#include "mqtt/packet_id_states.h"

#include <gtest/gtest.h>

namespace seedance::mqtt {
namespace {

TEST(PacketIdStatesTest, EachIdKeepsItsOwnStateBesideItsNeighbours) {
  PacketIdStates states;
  for (uint32_t id = 0; id < 65536; ++id) ASSERT_EQ(states.Get(static_cast<uint16_t>(id)), 0);
  // Neighbours share a byte: setting one must leave the other three as they are.
  for (uint32_t id = 0; id < 65536; ++id) {
    states.Set(static_cast<uint16_t>(id), static_cast<uint8_t>(id % 4));
  }
  for (uint32_t id = 0; id < 65536; ++id) {
    ASSERT_EQ(states.Get(static_cast<uint16_t>(id)), id % 4) << id;
  }
  states.Set(5, 0);
  EXPECT_EQ(states.Get(4), 0);
  EXPECT_EQ(states.Get(5), 0);
  EXPECT_EQ(states.Get(6), 2);
  EXPECT_EQ(states.Get(7), 3);
  states.Set(65535, 1);
  EXPECT_EQ(states.Get(65535), 1);
  EXPECT_EQ(states.Get(65534), 2);
  states.Clear();
  for (uint32_t id = 0; id < 65536; ++id) ASSERT_EQ(states.Get(static_cast<uint16_t>(id)), 0);
}

}  // namespace
}  // namespace seedance::mqtt
