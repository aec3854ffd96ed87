// Writing whole buffers to file descriptors.
#pragma once

#include <string_view>

namespace seedance::util {

// Writes all of `data` to `fd`, retrying short writes and EINTR. Returns 0, or the errno of
// the failed write(2).
int WriteAll(int fd, std::string_view data);

}  // namespace seedance::util
