#include "mqtt/broker_uri.h"

#include <cstdlib>

namespace seedance::mqtt {

Result<BrokerAddress> ParseBrokerUri(std::string_view uri) {
  auto bad = [&](const std::string& why) {
    return InvalidArgumentError("expected a broker URI like tcp://host:1883 or ssl://host:8883 (" +
                                why + "), got \"" + std::string(uri) + "\"");
  };
  BrokerAddress a;
  size_t sep = uri.find("://");
  if (sep == std::string_view::npos) return bad("no scheme");
  std::string_view scheme = uri.substr(0, sep);
  if (scheme == "tcp" || scheme == "mqtt") {
    a.tls = false;
    a.port = 1883;
  } else if (scheme == "ssl" || scheme == "tls" || scheme == "mqtts") {
    a.tls = true;
    a.port = 8883;
  } else {
    return bad("unknown scheme \"" + std::string(scheme) + "\"");
  }
  std::string_view rest = uri.substr(sep + 3);
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  if (rest.find('/') != std::string_view::npos) return bad("no path allowed");
  std::string_view host = rest;
  if (!rest.empty() && rest.front() == '[') {  // [::1]:1883
    size_t close = rest.find(']');
    if (close == std::string_view::npos) return bad("unclosed '['");
    host = rest.substr(1, close - 1);
    rest = rest.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') return bad("junk after ']'");
  } else if (size_t colon = rest.rfind(':'); colon != std::string_view::npos) {
    host = rest.substr(0, colon);
    rest = rest.substr(colon);
  } else {
    rest = {};
  }
  if (!rest.empty()) {
    std::string port(rest.substr(1));
    char* end = nullptr;
    long p = std::strtol(port.c_str(), &end, 10);
    if (port.empty() || *end != '\0' || p <= 0 || p > 65535) return bad("bad port");
    a.port = static_cast<uint16_t>(p);
  }
  if (host.empty()) return bad("no host");
  a.host = std::string(host);
  return a;
}

}  // namespace seedance::mqtt
