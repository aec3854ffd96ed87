// Writing whole buffers to file descriptors.
#pragma once

#include <string_view>

namespace seedance::util {

// Writes all of `data` to `fd`, retrying short writes and EINTR. Returns 0, or the errno of
// the failed write(2).
int WriteAll(int fd, std::string_view data);

// Raises the soft limit on open descriptors to the hard limit (as Go's runtime and systemd
// services do), so the durable queue's files have room beside network connections. Returns
// the soft limit now in force.
long RaiseOpenFileLimit();  // NOLINT(runtime/int): rlim_t fits

}  // namespace seedance::util
