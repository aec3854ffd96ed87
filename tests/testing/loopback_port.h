// Loopback ports for the C++ tests' child servers (mosquitto, nats-server).
#pragma once

namespace seedance::testing {

// A TCP port on 127.0.0.1 that was free a moment ago (0 if none could be had): drawn below the
// kernel's ephemeral range, never handed out twice by this process, and reserved against the
// other test processes (C++ and Python, tests/testing/ports.py) until this one exits.
int FreeLoopbackPort();
// True when something accepts connections on 127.0.0.1:`port`.
bool AcceptingOnLoopback(int port);

}  // namespace seedance::testing
