// ${VAR} and ${VAR:-default} substitution in config values; "$$" is a literal "$".
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "seedance/result.h"

namespace seedance::config {

// Looks a variable up; std::nullopt when unset. The default reads the process environment.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
EnvLookup ProcessEnv();

// Returns `text` with references replaced. kInvalidArgument names an unset variable without
// a default, or an unterminated "${".
Result<std::string> ExpandEnv(std::string_view text, const EnvLookup& lookup);

}  // namespace seedance::config
