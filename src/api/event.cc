#include "seedance/event.h"

#include <algorithm>

namespace seedance {

std::string_view OutputName(Output output) {
  switch (output) {
    case Output::kMain:
      return "main";
    case Output::kError:
      return "error";
    case Output::kRejected:
      return "rejected";
    case Output::kStale:
      return "stale";
  }
  return "main";
}

bool ParseOutputName(std::string_view name, Output* output) {
  for (int i = 0; i < kOutputCount; ++i) {
    auto o = static_cast<Output>(i);
    if (OutputName(o) == name) {
      *output = o;
      return true;
    }
  }
  return false;
}

const std::string* Event::FindHeader(std::string_view name) const {
  for (const Header& h : headers) {
    if (h.name == name) return &h.value;
  }
  return nullptr;
}

void Event::SetHeader(std::string_view name, std::string_view value) {
  for (Header& h : headers) {
    if (h.name == name) {
      h.value = value;
      return;
    }
  }
  headers.push_back(Header{std::string(name), std::string(value)});
}

Status ValidateNamedOutput(std::string_view name) {
  Output standard;
  if (ParseOutputName(name, &standard)) {
    return InvalidArgumentError(std::string("\"") + std::string(name) +
                                "\" is a built-in output; a named output needs a name of its own");
  }
  const bool ok = !name.empty() && name.size() <= 64 && name[0] >= 'a' && name[0] <= 'z' &&
                  std::all_of(name.begin(), name.end(), [](char c) {
                    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
                  });
  if (!ok) {
    return InvalidArgumentError(
        "an output name is 1-64 of a-z, 0-9, _ and -, starting with a letter");
  }
  return Status::Ok();
}

size_t Event::MemoryBytes() const {
  // A string's heap block exists only beyond the small-string buffer kept inline.
  auto heap = [](const std::string& s) {
    return s.capacity() > std::string().capacity() ? s.capacity() + 1 : 0;
  };
  size_t bytes = sizeof(Event) + heap(source) + heap(topic) + heap(payload);
  bytes += headers.capacity() * sizeof(Header);
  for (const Header& h : headers) bytes += heap(h.name) + heap(h.value);
  return bytes;
}

}  // namespace seedance
