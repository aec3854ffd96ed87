// Loopback ports for the C++ tests' child servers (mosquitto, nats-server).
#pragma once

#include <string>

namespace seedance::testing {

// A TCP port on 127.0.0.1 that was free a moment ago (0 if none could be had): drawn below the
// kernel's ephemeral range, never handed out twice by this process, and reserved against the
// other test processes (C++ and Python, tests/testing/ports.py) until this one exits.
int FreeLoopbackPort();
// True when something accepts connections on 127.0.0.1:`port`.
bool AcceptingOnLoopback(int port);
// A socket connected to 127.0.0.1:`port` (the caller closes it), or -1.
int ConnectLoopback(int port);
// The low end of the kernel's ephemeral port range (ip_local_port_range; 32768 if unreadable).
int EphemeralPortRangeLow();
// The file whose flock reserves `port` for the test process holding it.
std::string PortLockPath(int port);

}  // namespace seedance::testing
