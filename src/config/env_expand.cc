#include "config/env_expand.h"

#include <cstdlib>

namespace seedance::config {

EnvLookup ProcessEnv() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

Result<std::string> ExpandEnv(std::string_view text, const EnvLookup& lookup) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c != '$' || i + 1 >= text.size()) {
      out.push_back(c);
      continue;
    }
    if (text[i + 1] == '$') {
      out.push_back('$');
      ++i;
      continue;
    }
    if (text[i + 1] != '{') {
      out.push_back(c);
      continue;
    }
    size_t close = text.find('}', i + 2);
    if (close == std::string_view::npos) {
      return InvalidArgumentError("unterminated \"${\" in \"" + std::string(text) + "\"");
    }
    std::string_view inner = text.substr(i + 2, close - i - 2);
    std::string_view name = inner;
    std::optional<std::string_view> fallback;
    if (size_t dash = inner.find(":-"); dash != std::string_view::npos) {
      name = inner.substr(0, dash);
      fallback = inner.substr(dash + 2);
    }
    if (name.empty()) return InvalidArgumentError("empty variable name in \"${}\"");
    std::optional<std::string> value = lookup(std::string(name));
    if (value && !(fallback && value->empty())) {
      out += *value;
    } else if (fallback) {
      out += *fallback;
    } else {
      return InvalidArgumentError("environment variable " + std::string(name) +
                                  " is not set and has no default (write ${" + std::string(name) +
                                  ":-default})");
    }
    i = close;
  }
  return out;
}

}  // namespace seedance::config
