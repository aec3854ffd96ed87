// The systemd notification protocol (sd_notify): a datagram such as "READY=1" sent to the
// Unix socket named by $NOTIFY_SOCKET. Lets `Type=notify` units and `seedance bench` know
// when the pipeline is up. Written here rather than linking libsystemd: the protocol is one
// sendto(2), and the binary stays free of shared-library dependencies.
#pragma once

#include <string_view>

namespace seedance::util {

// Sends `state` (e.g. "READY=1") when $NOTIFY_SOCKET is set; returns false when it is unset
// or the send failed. Abstract socket names ("@...") are supported.
bool NotifyServiceManager(std::string_view state);

}  // namespace seedance::util
