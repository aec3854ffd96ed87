#include "processors/lua/lua_limits.h"

#include <fmt/format.h>

extern "C" {
#include <lauxlib.h>
#include <lua.h>
}

namespace seedance::processors {
namespace {

// Pattern-matching steps between two looks at the clock (a step is a few nanoseconds).
constexpr int64_t kStepsPerClockCheck = 4096;

std::string Mebibytes(size_t bytes) {
  if (bytes % (size_t{1} << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  return fmt::format("{} bytes", bytes);
}

}  // namespace

const char* LuaLimitName(LuaLimit limit) {
  switch (limit) {
    case LuaLimit::kNone:
      return "none";
    case LuaLimit::kInstructions:
      return "instructions";
    case LuaLimit::kTime:
      return "time";
    case LuaLimit::kMemory:
      return "memory";
  }
  return "?";
}

LuaLimits::LuaLimits(LuaLimitOptions options, MemoryAccount* budget)
    : options_(options), budget_(budget) {}

LuaLimits::~LuaLimits() {
  if (budget_ != nullptr && charged_ > 0) budget_->Credit(charged_);
}

LuaLimits* LuaLimits::Of(lua_State* L) {
  void* ud = nullptr;
  lua_getallocf(L, &ud);
  return static_cast<LuaLimits*>(ud);
}

void LuaLimits::Attach(lua_State* L) {
  inner_alloc_ = lua_getallocf(L, &inner_ud_);
  used_ = static_cast<size_t>(lua_gc(L, LUA_GCCOUNT, 0)) * 1024 +
          static_cast<size_t>(lua_gc(L, LUA_GCCOUNTB, 0));
  lua_setallocf(L, Alloc, this);
  SettleCharge();
  lua_sethook(L, Hook, LUA_MASKCOUNT, kHookEvery);
}

void LuaLimits::BeginCall(lua_State* L) {
  if (exceeded_ != LuaLimit::kNone) lua_sethook(L, Hook, LUA_MASKCOUNT, kHookEvery);
  exceeded_ = LuaLimit::kNone;
  budget_left_ = options_.instructions;
  steps_since_clock_ = 0;
  if (options_.time.count() > 0) deadline_ = std::chrono::steady_clock::now() + options_.time;
}

std::string LuaLimits::Reason() const {
  switch (exceeded_) {
    case LuaLimit::kInstructions:
      return fmt::format("instruction limit of {} exceeded (runaway script?)",
                         options_.instructions);
    case LuaLimit::kTime:
      return fmt::format(
          "time limit of {} ms exceeded",
          std::chrono::duration_cast<std::chrono::milliseconds>(options_.time).count());
    case LuaLimit::kMemory:
      return fmt::format("memory limit of {} exceeded", Mebibytes(options_.memory));
    case LuaLimit::kNone:
      break;
  }
  return "no limit exceeded";
}

bool LuaLimits::PastDeadline() const {
  return options_.time.count() > 0 && std::chrono::steady_clock::now() >= deadline_;
}

void LuaLimits::Exceed(lua_State* L, LuaLimit limit) {
  exceeded_ = limit;
  // From now on every instruction raises: a pcall that caught this gains one instruction.
  lua_sethook(L, Hook, LUA_MASKCOUNT, 1);
  lua_pushstring(L, Reason().c_str());
  lua_error(L);
  __builtin_unreachable();
}

void LuaLimits::Hook(lua_State* L, lua_Debug* /*ar*/) {
  LuaLimits* self = Of(L);
  if (self->exceeded_ != LuaLimit::kNone) self->Exceed(L, self->exceeded_);
  if (self->options_.instructions > 0) {
    self->budget_left_ -= kHookEvery;
    if (self->budget_left_ < 0) self->Exceed(L, LuaLimit::kInstructions);
  }
  if (self->PastDeadline()) self->Exceed(L, LuaLimit::kTime);
}

void LuaLimits::Charge(lua_State* L, int64_t steps) {
  if (exceeded_ != LuaLimit::kNone) Exceed(L, exceeded_);
  if (options_.instructions > 0) {
    budget_left_ -= steps;
    if (budget_left_ < 0) Exceed(L, LuaLimit::kInstructions);
  }
  steps_since_clock_ += steps;
  if (steps_since_clock_ >= kStepsPerClockCheck) {
    steps_since_clock_ = 0;
    if (PastDeadline()) Exceed(L, LuaLimit::kTime);
  }
}

void* LuaLimits::Alloc(void* ud, void* ptr, size_t osize, size_t nsize) {
  auto* self = static_cast<LuaLimits*>(ud);
  if (nsize > osize && self->options_.memory > 0 &&
      self->used_ + (nsize - osize) > self->options_.memory) {
    // Lua raises "not enough memory"; the hook ends the call even if the script catches it.
    self->exceeded_ = LuaLimit::kMemory;
    return nullptr;
  }
  void* p = self->inner_alloc_(self->inner_ud_, ptr, osize, nsize);
  if (p == nullptr && nsize > 0) return nullptr;
  self->used_ = self->used_ + nsize >= osize ? self->used_ + nsize - osize : 0;
  self->SettleCharge();
  return p;
}

void LuaLimits::SettleCharge() {
  if (budget_ == nullptr) return;
  if (used_ > charged_ + kChargeStep) {
    const uint64_t delta = used_ - charged_;
    budget_->Charge(delta);
    charged_ += delta;
  } else if (charged_ > used_ + 2 * kChargeStep) {
    const uint64_t delta = charged_ - used_;
    budget_->Credit(delta);
    charged_ -= delta;
  }
}

}  // namespace seedance::processors
