// ComponentError: a plugin's error as the operator reads it, with the place to look first.
#pragma once

#include <string_view>

#include "seedance/status.h"

namespace seedance::config {

// `error` of the component `kind` "name" whose section starts at `location`
// ("file:line:column"): "file:line:column: kind "name": what". When the error already starts
// at a place in the same file (a plugin's check of one of its values), that place leads, so the
// line an editor jumps to is the value's, and it is not named twice:
//   config.yaml:19:13: source "modbus": group "meter": tags overlap
// instead of "config.yaml:3:5: source "modbus": config.yaml:19:13: group ...".
Status ComponentError(const Status& error, std::string_view location, std::string_view kind,
                      std::string_view name);

}  // namespace seedance::config
