#include "sinks/nats/nats_subject.h"

#include <fmt/format.h>

#include "util/strings.h"

namespace seedance::sinks {

std::string CheckNatsSubject(std::string_view subject) {
  if (subject.empty()) return "the subject is empty";
  if (!util::IsValidUtf8(subject)) return "the subject is not UTF-8";
  size_t token = 0;
  for (size_t i = 0; i <= subject.size(); ++i) {
    if (i == subject.size() || subject[i] == '.') {
      if (i == token) {
        return fmt::format("\"{}\" has an empty token (a leading, trailing or double dot)",
                           util::SanitizeText(subject, 128));
      }
      token = i + 1;
      continue;
    }
    const auto c = static_cast<unsigned char>(subject[i]);
    if (c <= ' ' || c == 0x7f) {
      return fmt::format("\"{}\" holds whitespace or a control character",
                         util::SanitizeText(subject, 128));
    }
    if (c == '*' || c == '>') {
      return fmt::format("\"{}\" holds a wildcard (* or >: for subscriptions)",
                         util::SanitizeText(subject, 128));
    }
  }
  return "";
}

}  // namespace seedance::sinks
