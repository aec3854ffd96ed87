#include "util/listen_address.h"

#include <charconv>

namespace seedance::util {

Result<boost::asio::ip::tcp::endpoint> ParseListenAddress(const std::string& address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) {
    return InvalidArgumentError("expected host:port (e.g. 127.0.0.1:9464), got \"" + address +
                                "\"");
  }
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string::npos) {
    return InvalidArgumentError("an IPv6 address needs brackets, e.g. [::1]:9464; got \"" +
                                address + "\"");
  }
  if (host.empty()) host = "0.0.0.0";
  const std::string port_text = address.substr(colon + 1);
  unsigned port = 0;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc() || end != port_text.data() + port_text.size() ||
      port > 65535) {
    return InvalidArgumentError("the port must be a number from 0 to 65535; got \"" + address +
                                "\"");
  }
  boost::system::error_code bad;
  auto ip = boost::asio::ip::make_address(host, bad);
  if (bad) return InvalidArgumentError("\"" + host + "\" is not an IP address");
  return boost::asio::ip::tcp::endpoint(ip, static_cast<uint16_t>(port));
}

}  // namespace seedance::util
