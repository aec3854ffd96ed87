// Writing whole buffers to file descriptors.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "seedance/result.h"

namespace seedance::util {

// Writes all of `data` to `fd`, retrying short writes and EINTR. Returns 0, or the errno of
// the failed write(2).
int WriteAll(int fd, std::string_view data);

// Reads the whole of `path`, which must be a regular file of at most `max_bytes`. A device,
// FIFO or directory (/dev/zero would never end, a FIFO would block) is refused, as is a file
// that is larger or grows past the limit while read. `what` names the file in messages
// ("script", "config file"). kNotFound when it cannot be opened, else kInvalidArgument.
Result<std::string> ReadRegularFile(const std::string& path, size_t max_bytes,
                                    std::string_view what);

// Raises the soft limit on open descriptors to the hard limit (as Go's runtime and systemd
// services do), so the durable queue's files have room beside network connections. Returns
// the soft limit now in force.
long RaiseOpenFileLimit();  // NOLINT(runtime/int): rlim_t fits

// Opens /dev/null on each of descriptors 0, 1 and 2 that is not open (`seedance run 2>&-`),
// before anything else is opened: otherwise the first file opened (a queue segment) would
// take the number, log lines would be written into it and a `stdin` source would read it.
// Called first thing in main().
void OpenStandardDescriptors();

}  // namespace seedance::util
