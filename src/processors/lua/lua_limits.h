// LuaLimits: what one script state may spend — instructions and wall-clock time per call,
// heap in all — enforced from inside the state.
//
// Instructions and time are checked by a count hook every kHookEvery VM instructions, and by
// the C functions that do unbounded work themselves (the pattern matcher) through Charge().
// Memory is enforced by the state's allocator: LuaJIT's own allocator, wrapped so that an
// allocation taking the heap past the limit fails (Lua raises "not enough memory").
//
// Once a limit is exceeded the call is over, whatever the script does: the hook then fires on
// every instruction and raises again, so pcall, xpcall and coroutine.resume cannot catch the
// error and carry on — each raise unwinds one protected level, and the script's own next
// instruction raises again. BeginCall() starts the next call with fresh budgets.
//
// The heap is charged to the pipeline's memory budget (limits.memory) in kChargeStep steps.
// Thread-compatible: one thread at a time (the processing thread, or the reloader while it
// loads a new version).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "seedance/plugin_context.h"

struct lua_State;
struct lua_Debug;

namespace seedance::processors {

struct LuaLimitOptions {
  int64_t instructions = 10'000'000;                        // per call; 0 = unlimited
  std::chrono::nanoseconds time = std::chrono::seconds(1);  // per call; 0 = unlimited
  size_t memory = size_t{64} << 20;                         // the state's heap; 0 = unlimited
};

enum class LuaLimit { kNone, kInstructions, kTime, kMemory };

// "instructions", "time", "memory" (metric label values).
const char* LuaLimitName(LuaLimit limit);

class LuaLimits {
 public:
  static constexpr int kHookEvery = 1000;           // instructions between checks
  static constexpr size_t kChargeStep = 256 << 10;  // budget charged in steps of this size

  LuaLimits(LuaLimitOptions options, MemoryAccount* budget);
  ~LuaLimits();  // credits the budget; REQUIRES: the state is closed
  LuaLimits(const LuaLimits&) = delete;
  LuaLimits& operator=(const LuaLimits&) = delete;

  // Takes over `L`'s allocator and installs the hook. REQUIRES: once, right after creating L.
  void Attach(lua_State* L);
  // Starts a call: fresh instruction budget and deadline, nothing exceeded.
  void BeginCall(lua_State* L);
  // The limit the current call ran into, or kNone.
  LuaLimit exceeded() const { return exceeded_; }
  // One line saying which limit was exceeded and its value.
  std::string Reason() const;

  // For C functions doing work in steps (pattern matching): counts `steps` against the
  // instruction budget and checks the clock now and then; raises a Lua error when over.
  void Charge(lua_State* L, int64_t steps);

  // The state's heap in bytes.
  size_t used() const { return used_; }
  const LuaLimitOptions& options() const { return options_; }

  // The LuaLimits attached to `L`.
  static LuaLimits* Of(lua_State* L);

 private:
  static void* Alloc(void* ud, void* ptr, size_t osize, size_t nsize);
  static void Hook(lua_State* L, ::lua_Debug* ar);
  // Marks `limit` exceeded, makes the hook fire on every instruction, raises.
  [[noreturn]] void Exceed(lua_State* L, LuaLimit limit);
  bool PastDeadline() const;
  void SettleCharge();

  LuaLimitOptions options_;
  MemoryAccount* budget_;
  void* (*inner_alloc_)(void*, void*, size_t, size_t) = nullptr;
  void* inner_ud_ = nullptr;
  size_t used_ = 0;
  uint64_t charged_ = 0;  // bytes charged to budget_
  int64_t budget_left_ = 0;
  int64_t steps_since_clock_ = 0;
  std::chrono::steady_clock::time_point deadline_{};
  LuaLimit exceeded_ = LuaLimit::kNone;
};

}  // namespace seedance::processors
