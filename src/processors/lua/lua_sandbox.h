// The sandbox a filter script runs in: which libraries it sees, and library functions
// replaced by versions a script cannot run away with.
//
// Opens base, string, table, math and bit; `print` writes to the log. io, os (beyond
// time/clock/date/difftime), debug, ffi, require, load/loadstring/loadfile/dofile, jit and
// newproxy are absent unless granted. Replaced: string.find/match/gmatch/gsub (a matcher with
// a step budget, lua_patterns.h); string.rep refuses a result larger than the memory limit
// before allocating; os.date takes formats up to kMaxDateFormat bytes; collectgarbage accepts
// only "collect", "count" and "step" (a script cannot stop the collector); xpcall does not run
// the script's message handler for an error that a limit raised (a C function: a coroutine
// cannot yield across it).
#pragma once

#include <string>
#include <vector>

struct lua_State;

namespace seedance::processors {

inline constexpr size_t kMaxDateFormat = 256;

struct LuaSandboxOptions {
  std::vector<std::string> allow;  // grants: io, os, require, load, ffi, debug
  std::string log_name = "lua";    // the component name `print` logs under
};

// Opens the libraries and applies the sandbox. REQUIRES: a fresh state with LuaLimits attached.
void OpenSandbox(lua_State* L, const LuaSandboxOptions& options);

}  // namespace seedance::processors
