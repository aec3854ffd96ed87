// NATS subjects: tokens separated by dots, at least one; no empty token, no whitespace or
// control character, and no wildcard (`*`, `>`: they are for subscriptions).
#pragma once

#include <string>
#include <string_view>

namespace seedance::sinks {

// Empty when `subject` is a subject one can publish to; else what is wrong with it.
std::string CheckNatsSubject(std::string_view subject);

}  // namespace seedance::sinks
