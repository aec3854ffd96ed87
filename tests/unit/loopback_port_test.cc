// The C++ tests' port picker: the same promises as tests/testing/ports.py (and
// tests/integration/test_free_ports.py), checked against real sockets and lock files.
#include "testing/loopback_port.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <unistd.h>

#include <set>
#include <string>

namespace seedance::testing {
namespace {

TEST(LoopbackPortTest, ManyCallsNeverGiveOnePortTwiceAndEachIsBindableBelowTheEphemeralRange) {
  std::set<int> seen;
  for (int i = 0; i < 200; ++i) {
    const int port = FreeLoopbackPort();
    ASSERT_GT(port, 0);
    EXPECT_TRUE(seen.insert(port).second) << port << " handed out twice";
    EXPECT_LT(port, EphemeralPortRangeLow());
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << port;
    ::close(fd);
  }
}

TEST(LoopbackPortTest, AHandedOutPortStaysReservedAgainstOtherProcesses) {
  const int port = FreeLoopbackPort();
  ASSERT_GT(port, 0);
  // flock belongs to an open file: a second open of the port's lock file is refused the lock
  // exactly as another process would be.
  const std::string path = PortLockPath(port);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0) << path;
  EXPECT_NE(::flock(fd, LOCK_EX | LOCK_NB), 0);
  ::close(fd);
}

}  // namespace
}  // namespace seedance::testing
