#include "processors/lua/lua_json.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <string_view>
#include <vector>

#include "util/strings.h"

extern "C" {
#include <lauxlib.h>
}

namespace seedance::processors {
namespace {

constexpr int kMaxDepth = 64;

bool IsNull(lua_State* L, int index) {
  return lua_type(L, index) == LUA_TLIGHTUSERDATA && lua_touserdata(L, index) == nullptr;
}

// True when the table at `index` carries the array metatable.
bool HasArrayMeta(lua_State* L, int index) {
  if (!lua_getmetatable(L, index)) return false;
  luaL_getmetatable(L, kArrayMeta);
  bool same = lua_rawequal(L, -1, -2);
  lua_pop(L, 2);
  return same;
}

int AbsIndex(lua_State* L, int index) {
  return index > 0 || index <= LUA_REGISTRYINDEX ? index : lua_gettop(L) + index + 1;
}

// Number of keys in the table at `index` (all kinds).
size_t CountKeys(lua_State* L, int index) {
  index = AbsIndex(L, index);
  size_t n = 0;
  lua_pushnil(L);
  while (lua_next(L, index) != 0) {
    ++n;
    lua_pop(L, 1);
  }
  return n;
}

// Where serialization writes, and how much it may write: a table can hold the same large string
// many times, so the output is bounded on its own, not only by the state's memory.
struct JsonOut {
  std::string& text;
  size_t max_bytes;
};

// A failure at this value: the message starts with ": " so that each enclosing level can put
// its step in front (".key", "[3]") and the caller the root's name.
Status Here(std::string_view reason) { return InvalidArgumentError(": " + std::string(reason)); }

Status Under(Status s, std::string_view step) {
  if (s.ok()) return s;
  constexpr size_t kMaxStep = 64;  // keys come from payloads: keep the path readable
  std::string path(step.substr(0, kMaxStep));
  if (step.size() > kMaxStep) path += "...";
  return InvalidArgumentError(path + s.message());
}

Status AppendNumber(std::string& out, double d) {
  if (!std::isfinite(d))
    return Here(std::isnan(d) ? "NaN is not a JSON number" : "infinity is not a JSON number");
  char buf[32];
  if (d == std::floor(d) && std::fabs(d) < 1e15) {
    auto r = std::to_chars(buf, buf + sizeof buf, static_cast<long long>(d));
    out.append(buf, r.ptr);
    return Status::Ok();
  }
  auto r = std::to_chars(buf, buf + sizeof buf, d);
  out.append(buf, r.ptr);
  return Status::Ok();
}

Status Serialize(lua_State* L, int index, const rapidjson::Value* hint, JsonOut& json, int depth);

Status SerializeTable(lua_State* L, int t, const rapidjson::Value* hint, JsonOut& json, int depth) {
  std::string& out = json.text;
  const size_t n = lua_objlen(L, t);
  const size_t keys = CountKeys(L, t);
  bool as_array =
      (n > 0 && keys == n) || (keys == 0 && (HasArrayMeta(L, t) || (hint && hint->IsArray())));
  if (as_array) {
    out.push_back('[');
    for (size_t i = 1; i <= n; ++i) {
      if (i > 1) out.push_back(',');
      lua_rawgeti(L, t, static_cast<int>(i));
      const rapidjson::Value* h = hint && hint->IsArray() && i - 1 < hint->Size()
                                      ? &(*hint)[static_cast<rapidjson::SizeType>(i - 1)]
                                      : nullptr;
      Status s = Serialize(L, -1, h, json, depth + 1);
      lua_pop(L, 1);
      if (!s.ok()) return Under(std::move(s), "[" + std::to_string(i) + "]");
    }
    out.push_back(']');
    return Status::Ok();
  }
  // Object: keys of the original document first, in its order, then the rest sorted.
  out.push_back('{');
  bool first = true;
  std::vector<std::string> done;
  auto emit = [&](std::string_view key, const rapidjson::Value* h) -> Status {
    if (!first) out.push_back(',');
    first = false;
    if (out.size() + key.size() > json.max_bytes) {
      return Here("the JSON text would be larger than " + std::to_string(json.max_bytes) +
                  " bytes");
    }
    util::AppendJsonString(out, key);
    out.push_back(':');
    return Under(Serialize(L, -1, h, json, depth + 1), "." + std::string(key));
  };
  if (hint && hint->IsObject()) {
    for (auto m = hint->MemberBegin(); m != hint->MemberEnd(); ++m) {
      lua_pushlstring(L, m->name.GetString(), m->name.GetStringLength());
      lua_rawget(L, t);
      if (!lua_isnil(L, -1)) {
        Status s =
            emit(std::string_view(m->name.GetString(), m->name.GetStringLength()), &m->value);
        if (!s.ok()) {
          lua_pop(L, 1);
          return s;
        }
        done.emplace_back(m->name.GetString(), m->name.GetStringLength());
      }
      lua_pop(L, 1);
    }
  }
  std::vector<std::string> rest;
  lua_pushnil(L);
  while (lua_next(L, t) != 0) {
    lua_pop(L, 1);
    std::string key;
    if (lua_type(L, -1) == LUA_TSTRING) {
      size_t len = 0;
      const char* s = lua_tolstring(L, -1, &len);
      key.assign(s, len);
    } else if (lua_type(L, -1) == LUA_TNUMBER) {
      lua_pushvalue(L, -1);
      key = lua_tostring(L, -1);  // converts the copy, not the key lua_next needs
      lua_pop(L, 1);
    } else {
      lua_pop(L, 1);
      return Here(std::string("a table key is a ") + lua_typename(L, lua_type(L, -1)) +
                  "; keys must be strings or numbers to become JSON");
    }
    if (std::find(done.begin(), done.end(), key) == done.end()) rest.push_back(std::move(key));
  }
  std::sort(rest.begin(), rest.end());
  for (const std::string& key : rest) {
    lua_pushlstring(L, key.data(), key.size());
    lua_rawget(L, t);
    if (lua_isnil(L, -1)) {  // a numeric key written as a string: look it up as a number
      lua_pop(L, 1);
      lua_pushnumber(L, std::strtod(key.c_str(), nullptr));
      lua_rawget(L, t);
    }
    Status s = emit(key, nullptr);
    lua_pop(L, 1);
    if (!s.ok()) return s;
  }
  out.push_back('}');
  return Status::Ok();
}

Status Serialize(lua_State* L, int index, const rapidjson::Value* hint, JsonOut& json, int depth) {
  std::string& out = json.text;
  if (depth > kMaxDepth) return Here("nested deeper than 64 levels (or a cycle)");
  // Checked at every value: a table may hold the same large table or key many times.
  if (out.size() > json.max_bytes) {
    return Here("the JSON text would be larger than " + std::to_string(json.max_bytes) + " bytes");
  }
  index = AbsIndex(L, index);
  luaL_checkstack(L, 6, "JSON serialization");
  switch (lua_type(L, index)) {
    case LUA_TNIL:
      out += "null";
      return Status::Ok();
    case LUA_TBOOLEAN:
      out += lua_toboolean(L, index) ? "true" : "false";
      return Status::Ok();
    case LUA_TNUMBER:
      return AppendNumber(out, lua_tonumber(L, index));
    case LUA_TSTRING: {
      size_t len = 0;
      const char* s = lua_tolstring(L, index, &len);
      if (out.size() + len > json.max_bytes) {
        return Here("the JSON text would be larger than " + std::to_string(json.max_bytes) +
                    " bytes");
      }
      util::AppendJsonString(out, std::string_view(s, len));
      return Status::Ok();
    }
    case LUA_TLIGHTUSERDATA:
      if (IsNull(L, index)) {
        out += "null";
        return Status::Ok();
      }
      break;
    case LUA_TTABLE:
      return SerializeTable(L, index, hint, json, depth);
    default:
      break;
  }
  return Here(std::string("a ") + lua_typename(L, lua_type(L, index)) +
              " cannot be written as JSON");
}

}  // namespace

void RegisterJsonSupport(lua_State* L) {
  luaL_newmetatable(L, kArrayMeta);
  lua_pop(L, 1);
}

void PushJson(lua_State* L, const rapidjson::Value& v) {
  luaL_checkstack(L, 4, "JSON nesting");
  switch (v.GetType()) {
    case rapidjson::kNullType:
      lua_pushlightuserdata(L, nullptr);
      return;
    case rapidjson::kFalseType:
      lua_pushboolean(L, 0);
      return;
    case rapidjson::kTrueType:
      lua_pushboolean(L, 1);
      return;
    case rapidjson::kNumberType:
      lua_pushnumber(L, v.GetDouble());
      return;
    case rapidjson::kStringType:
      lua_pushlstring(L, v.GetString(), v.GetStringLength());
      return;
    case rapidjson::kObjectType:
      lua_createtable(L, 0, static_cast<int>(v.MemberCount()));
      for (auto m = v.MemberBegin(); m != v.MemberEnd(); ++m) {
        lua_pushlstring(L, m->name.GetString(), m->name.GetStringLength());
        PushJson(L, m->value);
        lua_rawset(L, -3);
      }
      return;
    case rapidjson::kArrayType:
      lua_createtable(L, static_cast<int>(v.Size()), 0);
      for (rapidjson::SizeType i = 0; i < v.Size(); ++i) {
        PushJson(L, v[i]);
        lua_rawseti(L, -2, static_cast<int>(i + 1));
      }
      luaL_getmetatable(L, kArrayMeta);
      lua_setmetatable(L, -2);
      return;
  }
}

bool LuaEqualsJson(lua_State* L, int index, const rapidjson::Value& v) {
  index = AbsIndex(L, index);
  luaL_checkstack(L, 4, "JSON comparison");
  switch (v.GetType()) {
    case rapidjson::kNullType:
      return IsNull(L, index);
    case rapidjson::kFalseType:
      return lua_type(L, index) == LUA_TBOOLEAN && !lua_toboolean(L, index);
    case rapidjson::kTrueType:
      return lua_type(L, index) == LUA_TBOOLEAN && lua_toboolean(L, index);
    case rapidjson::kNumberType:
      return lua_type(L, index) == LUA_TNUMBER && lua_tonumber(L, index) == v.GetDouble();
    case rapidjson::kStringType: {
      if (lua_type(L, index) != LUA_TSTRING) return false;
      size_t len = 0;
      const char* s = lua_tolstring(L, index, &len);
      return len == v.GetStringLength() && std::memcmp(s, v.GetString(), len) == 0;
    }
    case rapidjson::kObjectType: {
      if (lua_type(L, index) != LUA_TTABLE) return false;
      if (CountKeys(L, index) != v.MemberCount()) return false;
      for (auto m = v.MemberBegin(); m != v.MemberEnd(); ++m) {
        lua_pushlstring(L, m->name.GetString(), m->name.GetStringLength());
        lua_rawget(L, index);
        bool same = LuaEqualsJson(L, -1, m->value);
        lua_pop(L, 1);
        if (!same) return false;
      }
      return true;
    }
    case rapidjson::kArrayType: {
      if (lua_type(L, index) != LUA_TTABLE) return false;
      if (CountKeys(L, index) != v.Size()) return false;
      for (rapidjson::SizeType i = 0; i < v.Size(); ++i) {
        lua_rawgeti(L, index, static_cast<int>(i + 1));
        bool same = LuaEqualsJson(L, -1, v[i]);
        lua_pop(L, 1);
        if (!same) return false;
      }
      return true;
    }
  }
  return false;
}

Status LuaToJson(lua_State* L, int index, const rapidjson::Value* hint, std::string& out,
                 std::string_view root, size_t max_bytes) {
  JsonOut json{out, max_bytes};
  return Under(Serialize(L, index, hint, json, 0), root);
}

}  // namespace seedance::processors
