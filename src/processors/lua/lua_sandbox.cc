#include "processors/lua/lua_sandbox.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "processors/lua/lua_json.h"
#include "processors/lua/lua_limits.h"
#include "processors/lua/lua_patterns.h"
#include "util/log.h"

extern "C" {
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
}

namespace seedance::processors {
namespace {

bool Granted(const LuaSandboxOptions& o, const char* what) {
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
    size_t len = 0;
    const char* s = lua_tolstring(L, -1, &len);
    if (i > 1) line += "\t";
    // The log cuts lines anyway; do not copy more than it keeps.
    if (line.size() < util::kMaxLogMessageBytes)
      line.append(s ? s : "?", s ? std::min(len, util::kMaxLogMessageBytes) : 1);
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

// Sets `table`.`name` to a C closure over the current value of that field.
void WrapField(lua_State* L, const char* table, const char* name, lua_CFunction wrapper) {
  lua_getglobal(L, table);
  lua_getfield(L, -1, name);
  lua_pushcclosure(L, wrapper, 1);
  lua_setfield(L, -2, name);
  lua_pop(L, 1);
}

// os.date with a bounded format: each conversion is a strftime the hook cannot interrupt.
int SafeDate(lua_State* L) {
  size_t len = 0;
  const char* format = luaL_optlstring(L, 1, "%c", &len);
  (void)format;
  if (len > kMaxDateFormat) {
    return luaL_error(L, "os.date: format of %d bytes is longer than the limit of %d",
                      static_cast<int>(std::min<size_t>(len, INT32_MAX)),
                      static_cast<int>(kMaxDateFormat));
  }
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
  return lua_gettop(L);
}

// string.rep that refuses a result over the state's memory limit before building it, and
// returns "" at once for an empty result however many repetitions are asked for.
int SafeRep(lua_State* L) {
  size_t len = 0;
  size_t sep_len = 0;
  luaL_checklstring(L, 1, &len);
  const lua_Number n = luaL_checknumber(L, 2);
  luaL_optlstring(L, 3, "", &sep_len);
  if (!(n >= 1) || (len == 0 && sep_len == 0)) {
    lua_pushliteral(L, "");
    return 1;
  }
  const double total = static_cast<double>(len) * n + static_cast<double>(sep_len) * (n - 1);
  const LuaLimits* limits = LuaLimits::Of(L);
  const size_t limit = limits != nullptr ? limits->options().memory : 0;
  if (limit > 0 && total > static_cast<double>(limit)) {
    return luaL_error(L, "string.rep: a result of %.0f bytes is over the memory limit of %d bytes",
                      total, static_cast<int>(std::min<size_t>(limit, INT32_MAX)));
  }
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, 1);
  return 1;
}

// xpcall's message handler, guarded: once a limit ended the call, the script's handler is not
// run. LuaJIT calls the handler before unwinding, and for an error raised by the count hook that
// is still inside the hook, where hooks are off: a looping handler would never be stopped.
int GuardedHandler(lua_State* L) {
  const LuaLimits* limits = LuaLimits::Of(L);
  if (limits != nullptr && limits->exceeded() != LuaLimit::kNone) return 1;  // the message
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, 1);
  return 1;
}

int SafeXpcall(lua_State* L) {
  luaL_checktype(L, 2, LUA_TFUNCTION);
  lua_pushvalue(L, 2);
  lua_pushcclosure(L, GuardedHandler, 1);
  lua_replace(L, 2);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
  return lua_gettop(L);
}

// collectgarbage limited to what cannot hurt: "collect", "count", "step".
int SafeCollectGarbage(lua_State* L) {
  const char* option = luaL_optstring(L, 1, "collect");
  if (std::strcmp(option, "collect") == 0) {
    lua_gc(L, LUA_GCCOLLECT, 0);
    lua_pushinteger(L, 0);
    return 1;
  }
  if (std::strcmp(option, "count") == 0) {
    lua_pushnumber(L, lua_gc(L, LUA_GCCOUNT, 0) + lua_gc(L, LUA_GCCOUNTB, 0) / 1024.0);
    return 1;
  }
  if (std::strcmp(option, "step") == 0) {
    lua_pushboolean(L, lua_gc(L, LUA_GCSTEP, static_cast<int>(luaL_optinteger(L, 2, 0))));
    return 1;
  }
  return luaL_error(L,
                    "collectgarbage(\"%s\") is not allowed in a filter script; use \"collect\", "
                    "\"count\" or \"step\"",
                    option);
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

}  // namespace

void OpenSandbox(lua_State* L, const LuaSandboxOptions& o) {
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
  RegisterSafePatterns(L);
  WrapField(L, "string", "rep", SafeRep);
  WrapField(L, "os", "date", SafeDate);
  WrapField(L, "_G", "xpcall", SafeXpcall);
  lua_pushcfunction(L, SafeCollectGarbage);
  lua_setglobal(L, "collectgarbage");
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

}  // namespace seedance::processors
