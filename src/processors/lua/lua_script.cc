#include "processors/lua/lua_script.h"

#include <fmt/format.h>

#include <algorithm>

#include "processors/lua/lua_json.h"
#include "util/log.h"

extern "C" {
#include <lauxlib.h>
#include <lua.h>
#include <luajit.h>
#include <lualib.h>
}

namespace seedance::processors {
namespace {

constexpr int kHookEvery = 1000;  // instructions between budget checks

bool Granted(const LuaScriptOptions& o, const char* what) {
  return std::find(o.allow.begin(), o.allow.end(), what) != o.allow.end();
}

int LuaPrint(lua_State* L) {
  int n = lua_gettop(L);
  std::string line;
  lua_getglobal(L, "tostring");
  for (int i = 1; i <= n; ++i) {
    lua_pushvalue(L, -1);
    lua_pushvalue(L, i);
    lua_call(L, 1, 1);
    const char* s = lua_tostring(L, -1);
    if (i > 1) line += "\t";
    line += s ? s : "?";
    lua_pop(L, 1);
  }
  lua_getfield(L, LUA_REGISTRYINDEX, "seedance.log_name");
  const char* name = lua_tostring(L, -1);
  util::LogLine(util::LogLevel::kInfo, name ? name : "lua", line);
  return 0;
}

void SetNil(lua_State* L, const char* global) {
  lua_pushnil(L);
  lua_setglobal(L, global);
}

// Keeps only the safe parts of os: time, clock, date, difftime.
void RestrictOs(lua_State* L) {
  lua_getglobal(L, "os");
  lua_createtable(L, 0, 4);
  for (const char* f : {"time", "clock", "date", "difftime"}) {
    lua_getfield(L, -2, f);
    lua_setfield(L, -2, f);
  }
  lua_setglobal(L, "os");
  lua_pop(L, 1);
}

void Sandbox(lua_State* L, const LuaScriptOptions& o) {
  luaL_openlibs(L);
  if (!Granted(o, "io")) SetNil(L, "io");
  if (!Granted(o, "os")) RestrictOs(L);
  if (!Granted(o, "debug")) SetNil(L, "debug");
  if (!Granted(o, "load")) {
    SetNil(L, "load");
    SetNil(L, "loadstring");
    SetNil(L, "loadfile");
    SetNil(L, "dofile");
  }
  if (!Granted(o, "ffi")) {
    // ffi is reachable through package.loaded; drop it there too.
    lua_getglobal(L, "package");
    lua_getfield(L, -1, "loaded");
    lua_pushnil(L);
    lua_setfield(L, -2, "ffi");
    lua_pop(L, 2);
    SetNil(L, "ffi");
  }
  if (Granted(o, "require")) {
    // Lua modules only: no native (C) loaders.
    lua_getglobal(L, "package");
    lua_pushstring(L, "");
    lua_setfield(L, -2, "cpath");
    lua_getfield(L, -1, "loaders");
    if (lua_istable(L, -1)) {
      lua_pushnil(L);
      lua_rawseti(L, -2, 4);
      lua_pushnil(L);
      lua_rawseti(L, -2, 3);
    }
    lua_pop(L, 2);
    SetNil(L, "module");
  } else {
    SetNil(L, "require");
    SetNil(L, "module");
    SetNil(L, "package");
  }
  SetNil(L, "jit");
  SetNil(L, "newproxy");
  lua_pushcfunction(L, LuaPrint);
  lua_setglobal(L, "print");
  lua_pushstring(L, o.log_name.c_str());
  lua_setfield(L, LUA_REGISTRYINDEX, "seedance.log_name");
  // seedance.null: the JSON null value.
  lua_createtable(L, 0, 1);
  lua_pushlightuserdata(L, nullptr);
  lua_setfield(L, -2, "null");
  lua_setglobal(L, "seedance");
  RegisterJsonSupport(L);
}

}  // namespace

LuaScript::LuaScript(lua_State* L, LuaScriptOptions options)
    : L_(L), options_(std::move(options)) {}

LuaScript::~LuaScript() {
  if (L_ != nullptr) lua_close(L_);
}

void LuaScript::CountHook(lua_State* L, lua_Debug* /*ar*/) {
  lua_getfield(L, LUA_REGISTRYINDEX, "seedance.script");
  auto* self = static_cast<LuaScript*>(lua_touserdata(L, -1));
  lua_pop(L, 1);
  if (self == nullptr || self->options_.instruction_limit <= 0) return;
  self->budget_left_ -= kHookEvery;
  if (self->budget_left_ < 0) {
    luaL_error(L, "instruction limit of %d exceeded (runaway script?)",
               static_cast<int>(std::min<int64_t>(self->options_.instruction_limit, INT32_MAX)));
  }
}

Result<std::unique_ptr<LuaScript>> LuaScript::Load(const std::string& code,
                                                   const std::string& chunk_name,
                                                   const LuaScriptOptions& options) {
  lua_State* L = luaL_newstate();
  if (L == nullptr) return ResourceExhaustedError("cannot create a Lua state (out of memory)");
  std::unique_ptr<LuaScript> script(new LuaScript(L, options));
  Sandbox(L, options);
  // After luaL_openlibs: opening the jit library switches the JIT (back) on.
  if (!options.jit) luaJIT_setmode(L, 0, LUAJIT_MODE_ENGINE | LUAJIT_MODE_OFF);
  lua_pushlightuserdata(L, script.get());
  lua_setfield(L, LUA_REGISTRYINDEX, "seedance.script");
  if (options.instruction_limit > 0) lua_sethook(L, CountHook, LUA_MASKCOUNT, kHookEvery);

  if (luaL_loadbuffer(L, code.data(), code.size(), ("@" + chunk_name).c_str()) != 0) {
    std::string msg = lua_tostring(L, -1) ? lua_tostring(L, -1) : "unknown error";
    return InvalidArgumentError("cannot load script: " + msg);
  }
  script->budget_left_ = options.instruction_limit;
  if (lua_pcall(L, 0, 0, 0) != 0) {
    std::string msg = lua_tostring(L, -1) ? lua_tostring(L, -1) : "unknown error";
    return InvalidArgumentError("script failed while loading: " + msg);
  }
  lua_getglobal(L, options.function.c_str());
  if (!lua_isfunction(L, -1)) {
    return InvalidArgumentError(
        fmt::format("script {} defines no function \"{}\"", chunk_name, options.function));
  }
  script->function_ref_ = luaL_ref(L, LUA_REGISTRYINDEX);
  return script;
}

namespace {

struct ProtectedBody {
  Status (*call)(void*);
  void* body;
  Status status;
};

int RunProtectedBody(lua_State* L) {
  auto* p = static_cast<ProtectedBody*>(lua_touserdata(L, 1));
  p->status = p->call(p->body);
  return 0;
}

}  // namespace

Status LuaScript::RunProtected(Status (*call)(void*), void* body) {
  const int top = lua_gettop(L_);
  budget_left_ = options_.instruction_limit;
  ProtectedBody p{call, body, Status::Ok()};
  const int rc = lua_cpcall(L_, RunProtectedBody, &p);
  Status result = std::move(p.status);
  if (rc != 0) {
    const char* msg = lua_tostring(L_, -1);
    result = InvalidArgumentError(msg ? msg : "error object is not a string");
  }
  lua_settop(L_, top);
  return result;
}

void LuaScript::PushFunction() { lua_rawgeti(L_, LUA_REGISTRYINDEX, function_ref_); }

Status LuaScript::Call(int nargs) {
  budget_left_ = options_.instruction_limit;
  if (lua_pcall(L_, nargs, 1, 0) != 0) {
    std::string msg = lua_tostring(L_, -1) ? lua_tostring(L_, -1) : "error object is not a string";
    lua_pop(L_, 1);
    return InvalidArgumentError(msg);
  }
  return Status::Ok();
}

}  // namespace seedance::processors
