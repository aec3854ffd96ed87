// LuaScript: one compiled filter script in its own sandboxed LuaJIT state (lua_sandbox.h),
// under its limits (lua_limits.h): instructions and wall-clock time per call, heap in all.
//
// The JIT is off by default because JIT-compiled loops do not run hooks (LuaJIT's documented
// behaviour), which would let a runaway loop escape the instruction and time limits.
// Not thread-safe: use from one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "processors/lua/lua_limits.h"
#include "processors/lua/lua_sandbox.h"
#include "seedance/result.h"

struct lua_State;

namespace seedance::processors {

struct LuaScriptOptions {
  std::string function = "process";
  LuaLimitOptions limits;
  bool jit = false;
  LuaSandboxOptions sandbox;
  MemoryAccount* budget = nullptr;  // limits.memory: the heap is charged here
};

class LuaScript {
 public:
  // Compiles and runs the chunk `code` (named `chunk_name` in messages) under the limits and
  // looks up the entry function. kInvalidArgument with the Lua message on syntax or load
  // errors, a limit exceeded while loading, or when the function is missing.
  static Result<std::unique_ptr<LuaScript>> Load(const std::string& code,
                                                 const std::string& chunk_name,
                                                 const LuaScriptOptions& options);
  ~LuaScript();
  LuaScript(const LuaScript&) = delete;
  LuaScript& operator=(const LuaScript&) = delete;

  lua_State* state() { return L_; }
  const LuaLimits& limits() const { return *limits_; }
  // Pushes the entry function.
  void PushFunction();
  // Calls with `nargs` arguments already pushed (after PushFunction), leaving one result.
  // REQUIRES: inside Protected(), which an error raised here ends.
  void Call(int nargs, int nresults = 1);
  // Runs `body` as one call of the script: fresh instruction and time budgets, in protected
  // mode (lua_cpcall). An error any Lua API call in it raises (the script's own, out of
  // memory, a metamethod of a table the script returned, a limit) becomes kInvalidArgument
  // with the message — for a limit, the limit's one-line reason (limits().exceeded() says
  // which) — instead of a panic that ends the process. The stack is back where it was
  // afterwards. C++ objects in `body` are destroyed on such an error: LuaJIT on x64 unwinds
  // with C++ exceptions.
  template <typename Fn>
  Status Protected(Fn&& body) {  // a template: no std::function allocation per event
    using Body = std::remove_reference_t<Fn>;
    return RunProtected([](void* b) -> Status { return (*static_cast<Body*>(b))(); }, &body);
  }
  // A full garbage collection; returns the heap in bytes afterwards.
  size_t Collect();

 private:
  LuaScript(lua_State* L, std::unique_ptr<LuaLimits> limits, LuaScriptOptions options);
  Status RunProtected(Status (*call)(void*), void* body);

  std::unique_ptr<LuaLimits> limits_;  // outlives L_ (the allocator's state)
  lua_State* L_;
  LuaScriptOptions options_;
  int function_ref_ = -1;
};

}  // namespace seedance::processors
