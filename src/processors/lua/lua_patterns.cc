#include "processors/lua/lua_patterns.h"

#include <cstring>

#include "processors/lua/lua_limits.h"

extern "C" {
#include <lauxlib.h>
#include <lua.h>
}

namespace seedance::processors {
namespace {

constexpr int kMaxCaptures = 32;    // LUA_MAXCAPTURES
constexpr int kMaxRecursion = 200;  // LuaJIT's LJ_MAX_XLEVEL: "pattern too complex"
constexpr ptrdiff_t kCapUnfinished = -1;
constexpr ptrdiff_t kCapPosition = -2;
constexpr char kEsc = '%';
constexpr const char* kSpecials = "^$*+?.([%-";
constexpr int64_t kStepsPerCharge = 256;

// Character classes on ASCII, independent of the locale (as LuaJIT's lj_char_*).
bool IsAlpha(unsigned c) { return (c | 0x20) - 'a' < 26; }
bool IsDigit(unsigned c) { return c - '0' < 10; }
bool IsLower(unsigned c) { return c - 'a' < 26; }
bool IsUpper(unsigned c) { return c - 'A' < 26; }
bool IsAlnum(unsigned c) { return IsAlpha(c) || IsDigit(c); }
bool IsSpace(unsigned c) { return c == ' ' || (c >= '\t' && c <= '\r'); }
bool IsCntrl(unsigned c) { return c < 32 || c == 127; }
bool IsPunct(unsigned c) { return c > 32 && c < 127 && !IsAlnum(c); }
bool IsXdigit(unsigned c) { return IsDigit(c) || (c | 0x20) - 'a' < 6; }

bool MatchClass(unsigned c, unsigned cl) {
  bool res;
  switch (cl | 0x20) {
    case 'a':
      res = IsAlpha(c);
      break;
    case 'c':
      res = IsCntrl(c);
      break;
    case 'd':
      res = IsDigit(c);
      break;
    case 'l':
      res = IsLower(c);
      break;
    case 'p':
      res = IsPunct(c);
      break;
    case 's':
      res = IsSpace(c);
      break;
    case 'u':
      res = IsUpper(c);
      break;
    case 'w':
      res = IsAlnum(c);
      break;
    case 'x':
      res = IsXdigit(c);
      break;
    case 'z':
      res = c == 0;
      break;
    default:
      return cl == c;  // %. %% %] ...: the character itself
  }
  return IsUpper(cl) ? !res : res;
}

struct MatchState {
  const char* src_init;
  const char* src_end;
  const char* p_end;
  lua_State* L;
  LuaLimits* limits;
  int level = 0;
  int depth = 0;
  int64_t steps = 0;
  struct {
    const char* init;
    ptrdiff_t len;
  } capture[kMaxCaptures];

  MatchState(lua_State* l, const char* s, size_t ls, const char* p, size_t lp)
      : src_init(s), src_end(s + ls), p_end(p + lp), L(l), limits(LuaLimits::Of(l)) {}

  // One unit of matcher work; every kStepsPerCharge of them go to the script's limits, which
  // raise when the call is over its instruction or time budget.
  void Step() {
    if (++steps >= kStepsPerCharge) Flush();
  }
  void Flush() {
    if (limits != nullptr && steps > 0) limits->Charge(L, steps);
    steps = 0;
  }
  void Reset() {
    level = 0;
    depth = 0;
  }
};

[[noreturn]] void Fail(lua_State* L, const char* message) {
  luaL_error(L, "%s", message);
  __builtin_unreachable();
}

// The end of the single-character class starting at `p`.
const char* ClassEnd(MatchState& ms, const char* p) {
  const char c = *p++;
  if (c == kEsc) {
    if (p >= ms.p_end) Fail(ms.L, "malformed pattern (ends with '%')");
    return p + 1;
  }
  if (c == '[') {
    if (p < ms.p_end && *p == '^') ++p;
    do {  // the first character is part of the set even when it is ']'
      if (p >= ms.p_end) Fail(ms.L, "malformed pattern (missing ']')");
      if (*p++ == kEsc && p < ms.p_end) ++p;  // skip escapes such as %]
      if (p >= ms.p_end) Fail(ms.L, "malformed pattern (missing ']')");
    } while (*p != ']');
    return p + 1;
  }
  return p;
}

// `p` points at '[', `ec` at its closing ']'.
bool MatchBracketClass(unsigned c, const char* p, const char* ec) {
  bool sig = true;
  if (*(p + 1) == '^') {
    sig = false;
    ++p;
  }
  while (++p < ec) {
    if (*p == kEsc) {
      ++p;
      if (MatchClass(c, static_cast<unsigned char>(*p))) return sig;
    } else if (*(p + 1) == '-' && p + 2 < ec) {
      p += 2;
      if (static_cast<unsigned char>(*(p - 2)) <= c && c <= static_cast<unsigned char>(*p))
        return sig;
    } else if (static_cast<unsigned char>(*p) == c) {
      return sig;
    }
  }
  return !sig;
}

bool SingleMatch(const MatchState& ms, const char* s, const char* p, const char* ep) {
  if (s >= ms.src_end) return false;
  const unsigned c = static_cast<unsigned char>(*s);
  switch (*p) {
    case '.':
      return true;
    case kEsc:
      return MatchClass(c, static_cast<unsigned char>(*(p + 1)));
    case '[':
      return MatchBracketClass(c, p, ep - 1);
    default:
      return static_cast<unsigned char>(*p) == c;
  }
}

const char* Match(MatchState& ms, const char* s, const char* p);

const char* MatchBalance(MatchState& ms, const char* s, const char* p) {
  if (p + 1 >= ms.p_end) Fail(ms.L, "malformed pattern (missing arguments to '%b')");
  if (s >= ms.src_end || *s != *p) return nullptr;
  const char b = *p;
  const char e = *(p + 1);
  int open = 1;
  while (++s < ms.src_end) {
    ms.Step();
    if (*s == e) {
      if (--open == 0) return s + 1;
    } else if (*s == b) {
      ++open;
    }
  }
  return nullptr;
}

const char* MaxExpand(MatchState& ms, const char* s, const char* p, const char* ep) {
  ptrdiff_t i = 0;
  while (SingleMatch(ms, s + i, p, ep)) {
    ms.Step();
    ++i;
  }
  while (i >= 0) {  // try the rest with the longest repetition first
    const char* res = Match(ms, s + i, ep + 1);
    if (res != nullptr) return res;
    --i;
  }
  return nullptr;
}

const char* MinExpand(MatchState& ms, const char* s, const char* p, const char* ep) {
  for (;;) {
    const char* res = Match(ms, s, ep + 1);
    if (res != nullptr) return res;
    if (!SingleMatch(ms, s, p, ep)) return nullptr;
    ++s;
  }
}

const char* StartCapture(MatchState& ms, const char* s, const char* p, ptrdiff_t what) {
  if (ms.level >= kMaxCaptures) Fail(ms.L, "too many captures");
  ms.capture[ms.level].init = s;
  ms.capture[ms.level].len = what;
  ms.level++;
  const char* res = Match(ms, s, p);
  if (res == nullptr) ms.level--;
  return res;
}

const char* EndCapture(MatchState& ms, const char* s, const char* p) {
  int open = ms.level - 1;
  while (open >= 0 && ms.capture[open].len != kCapUnfinished) --open;
  if (open < 0) Fail(ms.L, "invalid pattern capture");
  ms.capture[open].len = s - ms.capture[open].init;
  const char* res = Match(ms, s, p);
  if (res == nullptr) ms.capture[open].len = kCapUnfinished;
  return res;
}

const char* MatchCapture(MatchState& ms, const char* s, int digit) {
  const int l = digit - '1';
  if (l < 0 || l >= ms.level || ms.capture[l].len == kCapUnfinished)
    Fail(ms.L, "invalid capture index");
  const size_t len = static_cast<size_t>(ms.capture[l].len);
  if (static_cast<size_t>(ms.src_end - s) >= len && std::memcmp(ms.capture[l].init, s, len) == 0)
    return s + len;
  return nullptr;
}

const char* DoMatch(MatchState& ms, const char* s, const char* p) {
  for (;;) {  // a loop for the tail calls of the matcher
    ms.Step();
    if (p >= ms.p_end) return s;  // end of pattern: matched
    switch (*p) {
      case '(':
        if (p + 1 < ms.p_end && *(p + 1) == ')') return StartCapture(ms, s, p + 2, kCapPosition);
        return StartCapture(ms, s, p + 1, kCapUnfinished);
      case ')':
        return EndCapture(ms, s, p + 1);
      case '$':
        if (p + 1 == ms.p_end) return s == ms.src_end ? s : nullptr;
        break;  // a '$' elsewhere is a literal
      case kEsc:
        if (p + 1 < ms.p_end && *(p + 1) == 'b') {
          s = MatchBalance(ms, s, p + 2);
          if (s == nullptr) return nullptr;
          p += 4;
          continue;
        }
        if (p + 1 < ms.p_end && *(p + 1) == 'f') {
          p += 2;
          if (p >= ms.p_end || *p != '[') Fail(ms.L, "missing '[' after '%f' in pattern");
          const char* ep = ClassEnd(ms, p);
          const unsigned previous = s == ms.src_init ? 0u : static_cast<unsigned char>(*(s - 1));
          const unsigned current = s < ms.src_end ? static_cast<unsigned char>(*s) : 0u;
          if (MatchBracketClass(previous, p, ep - 1) || !MatchBracketClass(current, p, ep - 1))
            return nullptr;
          p = ep;
          continue;
        }
        if (p + 1 < ms.p_end && IsDigit(static_cast<unsigned char>(*(p + 1)))) {
          s = MatchCapture(ms, s, static_cast<unsigned char>(*(p + 1)));
          if (s == nullptr) return nullptr;
          p += 2;
          continue;
        }
        break;  // a class such as %d
      default:
        break;
    }
    // A single-character class, perhaps with a repetition suffix.
    const char* ep = ClassEnd(ms, p);
    const bool m = SingleMatch(ms, s, p, ep);
    const char suffix = ep < ms.p_end ? *ep : '\0';
    switch (suffix) {
      case '?': {
        if (m) {
          const char* res = Match(ms, s + 1, ep + 1);
          if (res != nullptr) return res;
        }
        p = ep + 1;
        continue;
      }
      case '*':
        return MaxExpand(ms, s, p, ep);
      case '+':
        return m ? MaxExpand(ms, s + 1, p, ep) : nullptr;
      case '-':
        return MinExpand(ms, s, p, ep);
      default:
        if (!m) return nullptr;
        ++s;
        p = ep;
        continue;
    }
  }
}

const char* Match(MatchState& ms, const char* s, const char* p) {
  if (++ms.depth > kMaxRecursion) Fail(ms.L, "pattern too complex");
  const char* res = DoMatch(ms, s, p);
  --ms.depth;
  return res;
}

void PushOneCapture(MatchState& ms, int i, const char* s, const char* e) {
  if (i >= ms.level) {
    if (i != 0) Fail(ms.L, "invalid capture index");
    lua_pushlstring(ms.L, s, static_cast<size_t>(e - s));  // the whole match
    return;
  }
  const ptrdiff_t len = ms.capture[i].len;
  if (len == kCapUnfinished) Fail(ms.L, "unfinished capture");
  if (len == kCapPosition) {
    lua_pushinteger(ms.L, ms.capture[i].init - ms.src_init + 1);
  } else {
    lua_pushlstring(ms.L, ms.capture[i].init, static_cast<size_t>(len));
  }
}

// Pushes the captures (or the whole match when there are none and `s` is set).
int PushCaptures(MatchState& ms, const char* s, const char* e) {
  const int n = (ms.level == 0 && s != nullptr) ? 1 : ms.level;
  luaL_checkstack(ms.L, n, "too many captures");
  for (int i = 0; i < n; ++i) PushOneCapture(ms, i, s, e);
  return n;
}

bool HasSpecials(const char* p, size_t lp) {
  for (size_t i = 0; i < lp; ++i)
    if (std::strchr(kSpecials, p[i]) != nullptr && p[i] != '\0') return true;
  return false;
}

// string.find / string.match (Lua 5.1 rules for the start position).
int FindAux(lua_State* L, bool find) {
  size_t ls = 0;
  size_t lp = 0;
  const char* s = luaL_checklstring(L, 1, &ls);
  const char* p = luaL_checklstring(L, 2, &lp);
  lua_Integer init = luaL_optinteger(L, 3, 1);
  if (init < 0)
    init += static_cast<lua_Integer>(ls);
  else
    --init;
  if (init < 0) init = 0;
  if (init > static_cast<lua_Integer>(ls)) init = static_cast<lua_Integer>(ls);
  if (find && (lua_toboolean(L, 4) || !HasSpecials(p, lp))) {
    // memmem is linear (two-way algorithm); an empty needle matches at `init`.
    const void* q = lp == 0 ? s + init : ::memmem(s + init, ls - init, p, lp);
    if (q != nullptr) {
      const lua_Integer at = static_cast<const char*>(q) - s;
      lua_pushinteger(L, at + 1);
      lua_pushinteger(L, at + static_cast<lua_Integer>(lp));
      return 2;
    }
    lua_pushnil(L);
    return 1;
  }
  MatchState ms(L, s, ls, p, lp);
  const bool anchor = lp > 0 && *p == '^';
  if (anchor) ++p;
  const char* s1 = s + init;
  do {
    ms.Reset();
    const char* e = Match(ms, s1, p);
    if (e != nullptr) {
      ms.Flush();
      if (find) {
        lua_pushinteger(L, s1 - s + 1);
        lua_pushinteger(L, e - s);
        return PushCaptures(ms, nullptr, nullptr) + 2;
      }
      return PushCaptures(ms, s1, e);
    }
  } while (s1++ < ms.src_end && !anchor);
  ms.Flush();
  lua_pushnil(L);
  return 1;
}

int Find(lua_State* L) { return FindAux(L, true); }
int MatchFn(lua_State* L) { return FindAux(L, false); }

int GmatchNext(lua_State* L) {
  size_t ls = 0;
  size_t lp = 0;
  const char* s = lua_tolstring(L, lua_upvalueindex(1), &ls);
  const char* p = lua_tolstring(L, lua_upvalueindex(2), &lp);
  MatchState ms(L, s, ls, p, lp);
  for (const char* src = s + lua_tointeger(L, lua_upvalueindex(3)); src <= ms.src_end; ++src) {
    ms.Reset();
    const char* e = Match(ms, src, p);
    if (e != nullptr) {
      ms.Flush();
      lua_Integer next = e - s;
      if (e == src) ++next;  // an empty match: move on by one
      lua_pushinteger(L, next);
      lua_replace(L, lua_upvalueindex(3));
      return PushCaptures(ms, src, e);
    }
  }
  ms.Flush();
  return 0;
}

int Gmatch(lua_State* L) {
  luaL_checkstring(L, 1);
  luaL_checkstring(L, 2);
  lua_settop(L, 2);
  lua_pushinteger(L, 0);
  lua_pushcclosure(L, GmatchNext, 3);
  return 1;
}

void AddReplacementString(MatchState& ms, luaL_Buffer* b, const char* s, const char* e) {
  size_t l = 0;
  const char* repl = lua_tolstring(ms.L, 3, &l);
  for (size_t i = 0; i < l; ++i) {
    if (repl[i] != kEsc) {
      luaL_addchar(b, repl[i]);
      continue;
    }
    if (++i == l) Fail(ms.L, "invalid use of '%' in replacement string");
    const unsigned char c = static_cast<unsigned char>(repl[i]);
    if (!IsDigit(c)) {
      luaL_addchar(b, repl[i]);  // %% and any other escaped character: the character
    } else if (c == '0') {
      luaL_addlstring(b, s, static_cast<size_t>(e - s));
    } else {
      PushOneCapture(ms, c - '1', s, e);
      luaL_addvalue(b);
    }
  }
}

void AddValue(MatchState& ms, luaL_Buffer* b, const char* s, const char* e) {
  lua_State* L = ms.L;
  switch (lua_type(L, 3)) {
    case LUA_TNUMBER:
    case LUA_TSTRING:
      AddReplacementString(ms, b, s, e);
      return;
    case LUA_TFUNCTION: {
      lua_pushvalue(L, 3);
      const int n = PushCaptures(ms, s, e);
      lua_call(L, n, 1);
      break;
    }
    default:  // a table
      PushOneCapture(ms, 0, s, e);
      lua_gettable(L, 3);
      break;
  }
  if (!lua_toboolean(L, -1)) {  // nil or false: keep the original text
    lua_pop(L, 1);
    lua_pushlstring(L, s, static_cast<size_t>(e - s));
  } else if (!lua_isstring(L, -1)) {
    luaL_error(L, "invalid replacement value (a %s)", luaL_typename(L, -1));
  }
  luaL_addvalue(b);
}

int Gsub(lua_State* L) {
  size_t ls = 0;
  size_t lp = 0;
  const char* src = luaL_checklstring(L, 1, &ls);
  const char* p = luaL_checklstring(L, 2, &lp);
  const int tr = lua_type(L, 3);
  const lua_Integer max_n = luaL_optinteger(L, 4, static_cast<lua_Integer>(ls) + 1);
  luaL_argcheck(L,
                tr == LUA_TNUMBER || tr == LUA_TSTRING || tr == LUA_TFUNCTION || tr == LUA_TTABLE,
                3, "string/function/table expected");
  MatchState ms(L, src, ls, p, lp);
  const bool anchor = lp > 0 && *p == '^';
  if (anchor) ++p;
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  lua_Integer n = 0;
  while (n < max_n) {
    ms.Reset();
    const char* e = Match(ms, src, p);
    if (e != nullptr) {
      ++n;
      ms.Flush();  // the replacement may call the script, which has its own hook
      AddValue(ms, &b, src, e);
    }
    if (e != nullptr && e > src) {
      src = e;
    } else if (src < ms.src_end) {
      luaL_addchar(&b, *src++);
    } else {
      break;
    }
    if (anchor) break;
  }
  ms.Flush();
  luaL_addlstring(&b, src, static_cast<size_t>(ms.src_end - src));
  luaL_pushresult(&b);
  lua_pushinteger(L, n);
  return 2;
}

}  // namespace

void RegisterSafePatterns(lua_State* L) {
  lua_getglobal(L, "string");
  lua_pushcfunction(L, Find);
  lua_setfield(L, -2, "find");
  lua_pushcfunction(L, MatchFn);
  lua_setfield(L, -2, "match");
  lua_pushcfunction(L, Gmatch);
  lua_setfield(L, -2, "gmatch");
  lua_pushcfunction(L, Gsub);
  lua_setfield(L, -2, "gsub");
  lua_pop(L, 1);
}

}  // namespace seedance::processors
