// Parses the "host:port" form of a listening address (metrics.listen, HTTP inputs).
#pragma once

#include <boost/asio/ip/tcp.hpp>

#include <string>

#include "seedance/result.h"

namespace seedance::util {

// "127.0.0.1:9464", "[::1]:9464", or ":9464" (every IPv4 address of the host, 0.0.0.0).
// The host must be an IP address (no name lookups at start-up) and the port 0..65535 in
// digits. kInvalidArgument says what is wrong.
Result<boost::asio::ip::tcp::endpoint> ParseListenAddress(const std::string& address);

}  // namespace seedance::util
