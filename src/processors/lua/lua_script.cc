#include "processors/lua/lua_script.h"

#include <fmt/format.h>

extern "C" {
#include <lauxlib.h>
#include <lua.h>
#include <luajit.h>
}

namespace seedance::processors {
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

struct LoadChunk {
  const std::string* code;
  const std::string* name;
};

int RunChunk(lua_State* L) {
  auto* c = static_cast<LoadChunk*>(lua_touserdata(L, 1));
  if (luaL_loadbuffer(L, c->code->data(), c->code->size(), ("@" + *c->name).c_str()) != 0) {
    lua_pushfstring(L, "cannot load script: %s", lua_tostring(L, -1));
    return lua_error(L);
  }
  lua_call(L, 0, 0);
  return 0;
}

}  // namespace

LuaScript::LuaScript(lua_State* L, std::unique_ptr<LuaLimits> limits, LuaScriptOptions options)
    : limits_(std::move(limits)), L_(L), options_(std::move(options)) {}

LuaScript::~LuaScript() {
  if (L_ != nullptr) lua_close(L_);
}

Result<std::unique_ptr<LuaScript>> LuaScript::Load(const std::string& code,
                                                   const std::string& chunk_name,
                                                   const LuaScriptOptions& options) {
  lua_State* L = luaL_newstate();
  if (L == nullptr) return ResourceExhaustedError("cannot create a Lua state (out of memory)");
  auto limits = std::make_unique<LuaLimits>(options.limits, options.budget);
  limits->Attach(L);
  std::unique_ptr<LuaScript> script(new LuaScript(L, std::move(limits), options));
  limits = nullptr;
  LuaLimits& lim = *script->limits_;
  lim.BeginCall(L);
  if (lua_cpcall(
          L,
          [](lua_State* l) -> int {
            OpenSandbox(l, *static_cast<const LuaSandboxOptions*>(lua_touserdata(l, 1)));
            return 0;
          },
          const_cast<LuaSandboxOptions*>(&options.sandbox)) != 0) {
    return ResourceExhaustedError(std::string("cannot set up the Lua state: ") +
                                  (lua_tostring(L, -1) ? lua_tostring(L, -1) : "?"));
  }
  // After luaL_openlibs: opening the jit library switches the JIT (back) on.
  if (!options.jit) luaJIT_setmode(L, 0, LUAJIT_MODE_ENGINE | LUAJIT_MODE_OFF);

  LoadChunk chunk{&code, &chunk_name};
  lim.BeginCall(L);
  if (lua_cpcall(L, RunChunk, &chunk) != 0) {
    std::string msg = lim.exceeded() != LuaLimit::kNone ? lim.Reason()
                      : lua_tostring(L, -1)             ? lua_tostring(L, -1)
                                                        : "unknown error";
    if (msg.rfind("cannot load script: ", 0) == 0) return InvalidArgumentError(msg);
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

Status LuaScript::RunProtected(Status (*call)(void*), void* body) {
  const int top = lua_gettop(L_);
  limits_->BeginCall(L_);
  ProtectedBody p{call, body, Status::Ok()};
  const int rc = lua_cpcall(L_, RunProtectedBody, &p);
  Status result = std::move(p.status);
  if (rc != 0) {
    const char* msg = lua_tostring(L_, -1);
    result = InvalidArgumentError(limits_->exceeded() != LuaLimit::kNone ? limits_->Reason()
                                  : msg != nullptr                       ? msg
                                                   : "error object is not a string");
  }
  lua_settop(L_, top);
  return result;
}

void LuaScript::PushFunction() { lua_rawgeti(L_, LUA_REGISTRYINDEX, function_ref_); }

void LuaScript::Call(int nargs, int nresults) { lua_call(L_, nargs, nresults); }

size_t LuaScript::Collect() {
  lua_gc(L_, LUA_GCCOLLECT, 0);
  return limits_->used();
}

}  // namespace seedance::processors
