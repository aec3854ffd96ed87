// Whether what came out of a chain is what a test expects, and a readable diff when not.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "pipetest/chain.h"
#include "pipetest/test_spec.h"

namespace seedance::pipetest {

// Why `actual` is not `expected`; nothing when it is.
std::optional<std::string> Mismatch(const Expected& expected, const Emitted& actual);

// Compares every event that came out with the list expected, in order. Empty when they all
// match; otherwise the diff: each position's expected (-) and actual (+) event, with why they
// differ, and the positions that match ( ).
std::string Diff(const std::vector<Expected>& expected, const std::vector<Emitted>& actual);

// One line for an event that came out: "<output> <payload>[ reason: ...]".
std::string Describe(const Emitted& e);
std::string Describe(const Expected& e);

}  // namespace seedance::pipetest
