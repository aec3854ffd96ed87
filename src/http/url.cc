#include "http/url.h"

#include <cstdlib>

namespace seedance::http {

std::string Url::HostHeader() const {
  bool default_port = (tls && port == 443) || (!tls && port == 80);
  std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return default_port ? h : h + ":" + std::to_string(port);
}

Result<Url> ParseUrl(std::string_view url) {
  auto bad = [&](const std::string& why) {
    return InvalidArgumentError("expected a URL like http://host:8080/path (" + why + "), got \"" +
                                std::string(url) + "\"");
  };
  Url u;
  std::string_view rest;
  if (url.substr(0, 7) == "http://") {
    rest = url.substr(7);
  } else if (url.substr(0, 8) == "https://") {
    u.tls = true;
    u.port = 443;
    rest = url.substr(8);
  } else {
    return bad("scheme must be http or https");
  }
  size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) u.target = std::string(rest.substr(slash));
  if (authority.find('@') != std::string_view::npos)
    return bad("credentials in URLs are not supported; use headers");
  std::string_view host = authority;
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) return bad("unclosed '['");
    host = authority.substr(1, close - 1);
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') return bad("junk after ']'");
      port = authority.substr(close + 2);
    }
  } else if (size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  if (host.empty()) return bad("no host");
  if (!port.empty()) {
    std::string p(port);
    char* end = nullptr;
    long v = std::strtol(p.c_str(), &end, 10);
    if (*end != '\0' || v <= 0 || v > 65535) return bad("bad port");
    u.port = static_cast<uint16_t>(v);
  }
  u.host = std::string(host);
  return u;
}

}  // namespace seedance::http
