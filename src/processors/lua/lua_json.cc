#include "processors/lua/lua_json.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "util/json_check.h"
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
  // The shortest form that reads back as the same double (fmt's Dragonbox: std::to_chars's
  // Ryu tables would add 0.13 MB to the binary for this one call).
  auto r = fmt::format_to_n(buf, sizeof buf, "{}", d);
  out.append(buf, r.out);
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

namespace {

// Builds the Lua value of a JSON text from the reader's events: each open array or object is on
// the Lua stack (an object's pending key above it), as PushJson would have built it.
class LuaBuilder {
 public:
  using Ch = char;
  explicit LuaBuilder(lua_State* L) : L_(L) {}
  bool Null() {
    lua_pushlightuserdata(L_, nullptr);
    return Put();
  }
  bool Bool(bool b) {
    lua_pushboolean(L_, b ? 1 : 0);
    return Put();
  }
  bool Int(int i) { return Number(i); }
  bool Uint(unsigned u) { return Number(u); }
  bool Int64(int64_t i) { return Number(static_cast<double>(i)); }
  bool Uint64(uint64_t u) { return Number(static_cast<double>(u)); }
  bool Double(double d) { return Number(d); }
  bool RawNumber(const Ch*, rapidjson::SizeType, bool) { return false; }  // not requested
  bool String(const Ch* s, rapidjson::SizeType n, bool) {
    lua_pushlstring(L_, s, n);
    return Put();
  }
  bool Key(const Ch* s, rapidjson::SizeType n, bool) {
    lua_pushlstring(L_, s, n);
    return true;
  }
  bool StartObject() { return Open(0); }
  bool StartArray() { return Open(1); }
  bool EndObject(rapidjson::SizeType) {
    next_.pop_back();
    return Put();
  }
  bool EndArray(rapidjson::SizeType) {
    luaL_getmetatable(L_, kArrayMeta);
    lua_setmetatable(L_, -2);
    next_.pop_back();
    return Put();
  }

 private:
  bool Number(double d) {
    lua_pushnumber(L_, d);
    return Put();
  }
  bool Open(uint32_t first) {
    luaL_checkstack(L_, 4, "JSON nesting");
    lua_createtable(L_, 0, 0);
    next_.push_back(first);  // 0: an object; else the array's next index
    return true;
  }
  // The value on top of the stack goes into the enclosing array or object (the root stays).
  bool Put() {
    if (next_.empty()) return true;
    if (next_.back() == 0) {
      lua_rawset(L_, -3);  // table, key, value
    } else {
      lua_rawseti(L_, -2, static_cast<int>(next_.back()++));
    }
    return true;
  }
  lua_State* L_;
  std::vector<uint32_t> next_;
};

// Compares the Lua value at an index with a JSON text as the reader goes through the text, by
// LuaEqualsJson's rules. Each open array or object has its Lua table on the stack; a value
// that differs stops the reader.
class LuaComparer {
 public:
  using Ch = char;
  LuaComparer(lua_State* L, int index) : L_(L), root_(AbsIndex(L, index)) {}
  bool Null() {
    return Scalar([&] { return IsNull(L_, -1); });
  }
  bool Bool(bool b) {
    return Scalar(
        [&] { return lua_type(L_, -1) == LUA_TBOOLEAN && (lua_toboolean(L_, -1) != 0) == b; });
  }
  bool Int(int i) { return Number(i); }
  bool Uint(unsigned u) { return Number(u); }
  bool Int64(int64_t i) { return Number(static_cast<double>(i)); }
  bool Uint64(uint64_t u) { return Number(static_cast<double>(u)); }
  bool Double(double d) { return Number(d); }
  bool RawNumber(const Ch*, rapidjson::SizeType, bool) { return false; }
  bool String(const Ch* s, rapidjson::SizeType n, bool) {
    return Scalar([&] {
      if (lua_type(L_, -1) != LUA_TSTRING) return false;
      size_t len = 0;
      const char* v = lua_tolstring(L_, -1, &len);
      return len == n && std::memcmp(v, s, len) == 0;
    });
  }
  bool Key(const Ch* s, rapidjson::SizeType n, bool) {
    lua_pushlstring(L_, s, n);
    ++levels_.back().seen;
    return true;
  }
  bool StartObject() { return Open(false); }
  bool StartArray() { return Open(true); }
  bool EndObject(rapidjson::SizeType) { return Close(); }
  bool EndArray(rapidjson::SizeType) { return Close(); }

 private:
  struct Level {
    bool array;
    uint32_t seen;  // members or elements so far
  };
  // Pushes the Lua value that the coming JSON value is compared with.
  void Fetch() {
    if (levels_.empty()) {
      lua_pushvalue(L_, root_);
    } else if (levels_.back().array) {
      lua_rawgeti(L_, -1, static_cast<int>(++levels_.back().seen));
    } else {
      lua_rawget(L_, -2);  // table, key -> table, value
    }
  }
  template <typename Same>
  bool Scalar(Same same) {
    Fetch();
    const bool equal = same();
    lua_pop(L_, 1);
    return equal;
  }
  bool Number(double d) {
    return Scalar([&] { return lua_type(L_, -1) == LUA_TNUMBER && lua_tonumber(L_, -1) == d; });
  }
  bool Open(bool array) {
    luaL_checkstack(L_, 4, "JSON comparison");
    Fetch();
    if (lua_type(L_, -1) != LUA_TTABLE) return false;
    levels_.push_back(Level{array, 0});
    return true;
  }
  // Same members, and no more than the text has (LuaEqualsJson counts every key).
  bool Close() {
    const bool equal = CountKeys(L_, -1) == levels_.back().seen;
    levels_.pop_back();
    lua_pop(L_, 1);
    return equal;
  }
  lua_State* L_;
  const int root_;
  std::vector<Level> levels_;
};

}  // namespace

Status PushJsonText(lua_State* L, std::string_view text) {
  const int top = lua_gettop(L);
  LuaBuilder builder(L);
  rapidjson::Reader reader;  // its own: a Lua error may unwind the parse
  Status s = json_internal::Read(text, builder, json_internal::StringMode::kCopy, &reader);
  if (!s.ok()) lua_settop(L, top);
  return s;
}

bool LuaEqualsJsonText(lua_State* L, int index, std::string_view text) {
  const int top = lua_gettop(L);
  LuaComparer comparer(L, index);
  rapidjson::Reader reader;
  const bool equal =
      json_internal::Read(text, comparer, json_internal::StringMode::kCopy, &reader).ok();
  lua_settop(L, top);
  return equal;
}

Status LuaToJson(lua_State* L, int index, const rapidjson::Value* hint, std::string& out,
                 std::string_view root, size_t max_bytes) {
  JsonOut json{out, max_bytes};
  return Under(Serialize(L, index, hint, json, 0), root);
}

}  // namespace seedance::processors
