// Small string helpers with no dependencies.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace seedance::util {

// Edit distance (insert, delete, substitute each cost 1).
size_t EditDistance(std::string_view a, std::string_view b);

// Returns the candidate closest to `word` when it is close enough to be a likely typo
// (distance ≤ max(2, |word|/3)), or "" when none is.
std::string ClosestMatch(std::string_view word, const std::vector<std::string>& candidates);

// Appends `s` to `out` as a JSON string literal, quotes included.
void AppendJsonString(std::string& out, std::string_view s);

}  // namespace seedance::util
