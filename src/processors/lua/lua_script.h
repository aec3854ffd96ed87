// LuaScript: one compiled filter script in its own sandboxed LuaJIT state.
//
// The sandbox opens base, string, table, math and bit; `print` writes to the log. io, os
// (beyond time/clock/date), debug, ffi, require, load/loadstring/loadfile/dofile are absent
// unless granted. Each call runs under an instruction budget enforced by a count hook; the
// JIT is off by default because JIT-compiled loops do not run hooks (LuaJIT's documented
// behaviour), which would let a runaway loop escape the budget.
// Not thread-safe: use from one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "seedance/result.h"

struct lua_State;
struct lua_Debug;

namespace seedance::processors {

struct LuaScriptOptions {
  std::string function = "process";
  int64_t instruction_limit = 10'000'000;  // per call; 0 = unlimited
  bool jit = false;
  std::vector<std::string> allow;  // grants: io, os, require, load, ffi, debug
  std::string log_name = "lua";
};

class LuaScript {
 public:
  // Compiles and runs the chunk `code` (named `chunk_name` in messages) and looks up the entry
  // function. kInvalidArgument with the Lua message on syntax or load errors, or when the
  // function is missing.
  static Result<std::unique_ptr<LuaScript>> Load(const std::string& code,
                                                 const std::string& chunk_name,
                                                 const LuaScriptOptions& options);
  ~LuaScript();
  LuaScript(const LuaScript&) = delete;
  LuaScript& operator=(const LuaScript&) = delete;

  lua_State* state() { return L_; }
  // Pushes the entry function.
  void PushFunction();
  // Calls with `nargs` arguments already pushed (after PushFunction), leaving one result.
  // kInvalidArgument with the Lua error message (or the budget message) on failure; the
  // stack is then back to where it was before PushFunction.
  Status Call(int nargs);
  // Runs `body` in protected mode (lua_cpcall), under a fresh instruction budget: an error
  // any Lua API call in it raises (out of memory, a metamethod of a table the script
  // returned, the budget) becomes kInvalidArgument with the Lua message instead of a panic
  // that ends the process. The stack is back where it was afterwards. C++ objects in `body`
  // are destroyed on such an error: LuaJIT on x64 unwinds with C++ exceptions.
  template <typename Fn>
  Status Protected(Fn&& body) {  // a template: no std::function allocation per event
    using Body = std::remove_reference_t<Fn>;
    return RunProtected([](void* b) -> Status { return (*static_cast<Body*>(b))(); }, &body);
  }

 private:
  explicit LuaScript(lua_State* L, LuaScriptOptions options);
  static void CountHook(lua_State* L, ::lua_Debug* ar);
  Status RunProtected(Status (*call)(void*), void* body);

  lua_State* L_;
  LuaScriptOptions options_;
  int function_ref_ = -1;
  int64_t budget_left_ = 0;
};

}  // namespace seedance::processors
