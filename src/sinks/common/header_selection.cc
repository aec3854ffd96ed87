#include "sinks/common/header_selection.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "util/strings.h"

namespace seedance::sinks {

Status CheckHeaderField(std::string_view name, std::string_view value) {
  static constexpr std::string_view kTokenPunctuation = "!#$%&'*+-.^_`|~";
  if (name.empty()) return InvalidArgumentError("a header name is empty");
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) &&
        kTokenPunctuation.find(c) == std::string_view::npos) {
      return InvalidArgumentError(
          fmt::format("header name \"{}\" has a character not allowed in a name ({:#04x})",
                      util::SanitizeText(name, 64), static_cast<unsigned char>(c)));
    }
  }
  for (char c : value) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7f) {
      return InvalidArgumentError(
          fmt::format("the value of header \"{}\" has a control character ({:#04x}); line breaks "
                      "would inject header fields",
                      name, u));
    }
  }
  return Status::Ok();
}

bool HeaderSelection::Wanted(std::string_view name) const {
  return std::any_of(patterns_.begin(), patterns_.end(), [name](const std::string& w) {
    return w.ends_with('*') ? name.starts_with(std::string_view(w).substr(0, w.size() - 1))
                            : name == w;
  });
}

}  // namespace seedance::sinks
