// Conversion between JSON (RapidJSON DOM) and Lua values, for the Lua processor.
//
// JSON objects become tables; arrays become tables with the metatable kArrayMeta (so an empty
// array stays an array); null becomes the light userdata `seedance.null`. Serializing back
// keeps the key order of the original document where a table came from one, and appends new
// keys in sorted order, so unchanged parts keep their shape.
#pragma once

#include <rapidjson/document.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "seedance/status.h"

extern "C" {
#include <lua.h>
}

namespace seedance::processors {

// Registry key of the metatable that marks tables built from JSON arrays.
inline constexpr const char* kArrayMeta = "seedance.json_array";

// Creates the array metatable. REQUIRES: once per state, before PushJson.
void RegisterJsonSupport(lua_State* L);

// Pushes `v` onto the stack (one slot).
void PushJson(lua_State* L, const rapidjson::Value& v);

// True when the Lua value at `index` holds exactly the data of `v`.
bool LuaEqualsJson(lua_State* L, int index, const rapidjson::Value& v);

// The same two straight from JSON text, without a document: for large payloads, whose
// document would take 2-5 times the text on top of the Lua table. PushJsonText pushes the
// value (one slot) or returns the parse error (the same rules as ParseJson: depth-limited,
// iterative); it may raise a Lua error (memory), so it runs in a protected call.
// LuaEqualsJsonText reads the text again and compares as it goes.
Status PushJsonText(lua_State* L, std::string_view text);
bool LuaEqualsJsonText(lua_State* L, int index, std::string_view text);

// Appends the JSON text of the Lua value at `index` to `out`. `hint` (may be null) is the
// document the value was built from, for key order. kInvalidArgument for values JSON cannot
// hold (functions, NaN and infinity, cyclic or too deep tables, keys that are neither strings
// nor numbers) and for text over `max_bytes`; the message names where, starting with `root`:
// "payload.readings[3].value: NaN is not a JSON number".
Status LuaToJson(lua_State* L, int index, const rapidjson::Value* hint, std::string& out,
                 std::string_view root = "value", size_t max_bytes = SIZE_MAX);

}  // namespace seedance::processors
