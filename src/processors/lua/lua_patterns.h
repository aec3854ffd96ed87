// Lua pattern matching that a script cannot run away with: string.find, string.match,
// string.gmatch and string.gsub with Lua 5.1 semantics, charging every matcher step to the
// script's limits (LuaLimits::Charge).
//
// Why our own matcher: LuaJIT's is C code the count hook never interrupts, and Lua patterns
// backtrack — `("a"):rep(40):find(("a*"):rep(25) .. "b")` takes longer than the universe,
// `s:find(".-x")` is quadratic in #s — so one line of a script could hang the processing
// thread and shutdown with it. No packaged library offers Lua patterns with a step budget
// (Lua 5.4's matcher bounds only recursion depth), and the algorithm is small.
// Differences from LuaJIT 2.1: a pattern may contain "\0" (matched literally, as in Lua 5.2);
// plain find uses memmem (linear) where LuaJIT's is quadratic in the worst case.
#pragma once

struct lua_State;

namespace seedance::processors {

// Replaces find, match, gmatch and gsub in the global `string` table (and so the string
// methods). REQUIRES: the state has LuaLimits attached.
void RegisterSafePatterns(lua_State* L);

}  // namespace seedance::processors
