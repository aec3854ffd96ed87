#include "config/component_error.h"

#include <fmt/format.h>

#include <string>

namespace seedance::config {
namespace {

// The length of "file:line:column" at the start of `text` when `file` leads it, else 0.
size_t PlaceIn(std::string_view text, std::string_view file) {
  if (file.empty() || !text.starts_with(file) || text.size() <= file.size() ||
      text[file.size()] != ':') {
    return 0;
  }
  size_t i = file.size();
  for (int part = 0; part < 2; ++part) {  // ":line" then ":column"
    if (i >= text.size() || text[i] != ':') return 0;
    const size_t digits = ++i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    if (i == digits) return 0;
  }
  return text.substr(i).starts_with(": ") ? i : 0;
}

}  // namespace

Status ComponentError(const Status& error, std::string_view location, std::string_view kind,
                      std::string_view name) {
  const std::string what = fmt::format("{} \"{}\"", kind, name);
  // The file is the location without its ":line:column".
  const size_t column = location.rfind(':');
  const size_t line = column == std::string_view::npos || column == 0
                          ? std::string_view::npos
                          : location.rfind(':', column - 1);
  if (line != std::string_view::npos) {
    const std::string_view message = error.message();
    if (const size_t place = PlaceIn(message, location.substr(0, line)); place > 0) {
      return Status(error.code(), fmt::format("{}: {}: {}", message.substr(0, place), what,
                                              message.substr(place + 2)));
    }
  }
  return error.WithContext(fmt::format("{}: {}", location, what));
}

}  // namespace seedance::config
