#include "processors/lua/lua_processor.h"

#include <fmt/format.h>
#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

#include <cstring>
#include <optional>

#include "observe/component_stats.h"
#include "observe/metrics.h"
#include "processors/lua/lua_json.h"
#include "processors/lua/lua_reloader.h"
#include "processors/lua/lua_script.h"
#include "seedance/options.h"
#include "seedance/plugin_context.h"
#include "util/json_check.h"
#include "util/log.h"
#include "util/scratch_buffer.h"

extern "C" {
#include <lauxlib.h>
#include <lua.h>
}

namespace seedance::processors {
namespace {

// A document whose parse stack comes from a pool too (rapidjson::Document's uses malloc on
// every parse).
using JsonDocument = rapidjson::GenericDocument<rapidjson::UTF8<>, rapidjson::MemoryPoolAllocator<>,
                                                rapidjson::MemoryPoolAllocator<>>;
// A large payload's document, parsed only when a script changed the payload (for its key
// order); its parse stack comes from malloc (a pool never frees: every time the stack doubled,
// its old block stayed).
using LargeJsonDocument =
    rapidjson::GenericDocument<rapidjson::UTF8<>, rapidjson::MemoryPoolAllocator<>,
                               rapidjson::CrtAllocator>;
// Payloads up to this size are parsed into a pooled document before the script runs; larger
// ones go to Lua straight from their text (JsonPayload).
constexpr size_t kPooledParseBytes = 64 * 1024;

// The payload's JSON as the bridge uses it. A small payload is parsed (`doc`). A large one
// stays text: its Lua table is built from the text, "unchanged?" reads the text again, and a
// document is parsed only if the script changed the payload: a document takes 2-5 times the
// text (16 bytes a number, 32 a member), on top of the Lua table.
struct JsonPayload {
  const rapidjson::Value* doc = nullptr;
  std::string_view text;  // set instead of doc for large payloads
  std::optional<LargeJsonDocument>* lazy = nullptr;
  rapidjson::MemoryPoolAllocator<>* pool = nullptr;

  // The document, for key order: parsed from `text` the first time.
  const rapidjson::Value* Document() {
    if (doc == nullptr && !text.empty()) {
      lazy->emplace(pool);
      if (ParseJson(text, **lazy).ok()) doc = &**lazy;
      text = {};
    }
    return doc;
  }
};

struct LuaProcessorOptions {
  LuaScriptOptions script;
  std::string chunk_name;  // the script's path, or the component's name for inline code
  int64_t max_events_per_call = 10'000;
  std::vector<std::string> outputs;  // named outputs a call may return (`outputs:`)
};

class LuaProcessor final : public Processor {
 public:
  LuaProcessor(std::unique_ptr<LuaScript> script, std::string code, LuaProcessorOptions options,
               PluginContext ctx)
      : script_(std::move(script)),
        code_(std::move(code)),
        options_(std::move(options)),
        ctx_(std::move(ctx)) {
    for (LuaLimit l : {LuaLimit::kInstructions, LuaLimit::kTime, LuaLimit::kMemory}) {
      exceeded_[static_cast<int>(l)] = &ExceededCounter(LuaLimitName(l));
    }
    events_exceeded_ = &ExceededCounter("events");
    state_resets_ = &ctx_.metrics->GetCounter(
        "seedance_lua_state_resets_total",
        "Script states replaced by a fresh one after the memory limit (globals lost).",
        {{"component", ctx_.name}});
    memory_ = &ctx_.metrics->GetGauge("seedance_lua_memory_bytes",
                                      "Heap of the script's Lua state, after the last event.",
                                      {{"component", ctx_.name}});
  }

  // Starts watching the script file for new versions.
  void WatchFile(const std::string& path, FileSignature sig, std::chrono::nanoseconds every) {
    auto reloads = [&](const char* result) -> observe::Counter& {
      return ctx_.metrics->GetCounter("seedance_lua_reloads_total", "Script reloads, by result.",
                                      {{"component", ctx_.name}, {"result", result}});
    };
    reloader_ = std::make_unique<ScriptReloader>(path, sig, every, options_.script, ctx_.name,
                                                 &reloads("ok"), &reloads("failed"));
  }

  void Process(Event&& event, ProcessorOutput& out) override;
  void Tick(int64_t now_ns, ProcessorOutput& out) override;

 private:
  observe::Counter& ExceededCounter(const char* limit) {
    return ctx_.metrics->GetCounter(
        "seedance_lua_budget_exceeded_total",
        "Script calls ended by a limit: instructions, time, memory, events (fan-out).",
        {{"component", ctx_.name}, {"limit", limit}});
  }
  // Builds the event table for `event` (payload from `doc` when JSON) on the stack.
  Status PushEvent(const Event& event, JsonPayload& json);
  // Reads the event table at `index` into `out`, based on `in`. kInvalidArgument naming the
  // field on a value of the wrong type.
  Status ReadEvent(int index, const Event& in, JsonPayload& json, Event& out);
  void Fail(Event&& event, ProcessorOutput& out, const std::string& why);
  // After a call that ran into the memory limit: collect, and when the state still holds more
  // than half the limit (it keeps data across events), replace it with a fresh one.
  void RecoverMemory();
  // What a run of the script made of one event.
  enum class RunResult { kOne, kList, kFiltered };
  // With named outputs, the `output` header names the one the event goes to (none: main).
  void Label(Event& e) const {
    if (options_.outputs.empty()) return;
    if (output_.empty()) {
      std::erase_if(e.headers, [](const Header& h) { return h.name == kOutputHeader; });
    } else {
      e.SetHeader(kOutputHeader, output_);
    }
  }
  // Pushes the event, calls the script and reads what it returned: into `scratch_` (kOne) or
  // `produced_` (kList). Every Lua API call in here can raise (memory, a metamethod on a
  // returned table, a limit), so it runs only under LuaScript::Protected.
  Status Run(const Event& event, JsonPayload& json, RunResult* result);

  std::unique_ptr<LuaScript> script_;
  std::string code_;  // the running version's source
  LuaProcessorOptions options_;
  PluginContext ctx_;
  std::unique_ptr<ScriptReloader> reloader_;
  observe::Counter* exceeded_[4] = {};
  observe::Counter* events_exceeded_;
  observe::Counter* state_resets_;
  observe::Gauge* memory_;
  // Per-event scratch, kept between events so the hot path does not allocate: the parsed
  // payload's values and the parser's stack live in these buffers, and the event a script
  // returns is read into `scratch_` (whose strings keep their storage), then swapped with
  // the input.
  char json_buffer_[64 * 1024];
  char json_stack_[16 * 1024];
  Event scratch_;
  std::vector<Event> produced_;
  std::string output_;         // the named output the last call returned; empty: main
  size_t produced_bytes_ = 0;  // payload, topic and headers of what one call returned
};

void LuaProcessor::Tick(int64_t /*now_ns*/, ProcessorOutput& /*out*/) {
  if (reloader_ == nullptr) return;
  std::optional<ScriptReloader::Version> next = reloader_->TakeReady();
  if (!next) return;
  script_ = std::move(next->script);
  code_ = std::move(next->code);
  SEEDANCE_LOG_INFO(ctx_.name, "reloaded {}", options_.chunk_name);
}

void LuaProcessor::RecoverMemory() {
  const size_t limit = options_.script.limits.memory;
  const size_t used = script_->Collect();
  if (limit == 0 || used <= limit / 2) return;
  auto fresh = LuaScript::Load(code_, options_.chunk_name, options_.script);
  if (!fresh) {
    SEEDANCE_LOG_ERROR(ctx_.name, "cannot build a fresh Lua state ({}); keeping the full one",
                       fresh.error().message());
    return;
  }
  script_ = std::move(fresh).value();
  state_resets_->Add();
  SEEDANCE_LOG_WARN(ctx_.name,
                    "the script's state held {} bytes after a full collection, over half its "
                    "memory limit of {}: replaced by a fresh state (globals reset)",
                    used, limit);
}

Status LuaProcessor::PushEvent(const Event& event, JsonPayload& json) {
  lua_State* L = script_->state();
  lua_createtable(L, 0, 7);
  if (json.doc != nullptr) {
    PushJson(L, *json.doc);
  } else if (!json.text.empty()) {
    SEEDANCE_RETURN_IF_ERROR(PushJsonText(L, json.text));
  } else {
    lua_pushlstring(L, event.payload.data(), event.payload.size());
  }
  lua_setfield(L, -2, "payload");
  lua_pushlstring(L, event.topic.data(), event.topic.size());
  lua_setfield(L, -2, "topic");
  lua_pushlstring(L, event.source.data(), event.source.size());
  lua_setfield(L, -2, "source");
  lua_pushnumber(L, static_cast<double>(event.event_time_ns) / 1e9);
  lua_setfield(L, -2, "time");
  lua_pushnumber(L, static_cast<double>(event.id));
  lua_setfield(L, -2, "id");
  lua_createtable(L, 0, static_cast<int>(event.headers.size()));
  for (const Header& h : event.headers) {
    lua_pushlstring(L, h.value.data(), h.value.size());
    lua_setfield(L, -2, h.name.c_str());
  }
  lua_setfield(L, -2, "headers");
  return Status::Ok();
}

// "a table", "a number", ...: for messages about a field of the wrong type.
std::string TypeOf(lua_State* L, int index) {
  return std::string("a ") + lua_typename(L, lua_type(L, index));
}

// A string field or header must not hide a NUL: sinks would cut it there.
bool HasNul(const char* s, size_t len) { return std::memchr(s, 0, len) != nullptr; }

Status LuaProcessor::ReadEvent(int index, const Event& in, JsonPayload& json, Event& out) {
  lua_State* L = script_->state();
  out.id = in.id;
  out.source = in.source;
  out.ingest_time_ns = in.ingest_time_ns;
  out.format = in.format;
  lua_getfield(L, index, "topic");
  if (lua_isnil(L, -1)) {
    out.topic = in.topic;
  } else if (lua_type(L, -1) == LUA_TSTRING) {
    size_t len = 0;
    const char* s = lua_tolstring(L, -1, &len);
    if (HasNul(s, len)) return InvalidArgumentError("event.topic contains a NUL byte");
    out.topic.assign(s, len);
  } else {
    return InvalidArgumentError("event.topic must be a string, got " + TypeOf(L, -1));
  }
  lua_pop(L, 1);
  lua_getfield(L, index, "time");
  out.event_time_ns = in.event_time_ns;
  if (lua_type(L, -1) == LUA_TNUMBER) {
    // Seconds since 1970 that fit nanoseconds in 64 bits (up to 2262); NaN, ±inf and anything
    // out of range were converted with undefined behaviour before.
    const double seconds = lua_tonumber(L, -1);
    if (!(seconds >= 0 && seconds < 9.2e9)) {
      return InvalidArgumentError(
          "event.time must be seconds since 1970 between 0 and 9.2e9 (year 2261), got " +
          std::to_string(seconds));
    }
    out.event_time_ns = static_cast<int64_t>(seconds * 1e9);
  } else if (!lua_isnil(L, -1)) {
    return InvalidArgumentError("event.time must be a number (seconds since 1970), got " +
                                TypeOf(L, -1));
  }
  lua_pop(L, 1);
  lua_getfield(L, index, "headers");
  if (lua_istable(L, -1)) {
    out.headers.clear();
    lua_pushnil(L);
    while (lua_next(L, -2) != 0) {
      if (lua_type(L, -2) != LUA_TSTRING) {
        return InvalidArgumentError("event.headers keys must be strings, got " + TypeOf(L, -2));
      }
      size_t name_len = 0;
      const char* name = lua_tolstring(L, -2, &name_len);
      const std::string_view shown(name, std::min<size_t>(name_len, 64));
      if (lua_type(L, -1) != LUA_TSTRING) {
        return InvalidArgumentError(
            fmt::format("event.headers[\"{}\"] must be a string, got {}", shown, TypeOf(L, -1)));
      }
      size_t value_len = 0;
      const char* value = lua_tolstring(L, -1, &value_len);
      if (HasNul(name, name_len) || HasNul(value, value_len)) {
        return InvalidArgumentError(
            fmt::format("event.headers[\"{}\"] contains a NUL byte", shown));
      }
      out.headers.push_back(Header{std::string(name, name_len), std::string(value, value_len)});
      produced_bytes_ += name_len + value_len;
      lua_pop(L, 1);
    }
  } else if (lua_isnil(L, -1)) {
    out.headers = in.headers;
  } else {
    return InvalidArgumentError("event.headers must be a table of strings, got " + TypeOf(L, -1));
  }
  lua_pop(L, 1);

  // What one call returns is bounded like the state's heap: one table can hold the same large
  // string many times.
  const size_t limit = options_.script.limits.memory > 0 ? options_.script.limits.memory : SIZE_MAX;
  produced_bytes_ += out.topic.size();
  lua_getfield(L, index, "payload");
  Status s;
  if (lua_isnil(L, -1)) {
    out.payload = in.payload;  // a new event table without payload keeps the input's
  } else if (in.format == PayloadFormat::kRaw && lua_type(L, -1) == LUA_TSTRING) {
    size_t len = 0;
    const char* p = lua_tolstring(L, -1, &len);
    out.payload.assign(p, len);
  } else if (json.doc != nullptr ? LuaEqualsJson(L, -1, *json.doc)
                                 : !json.text.empty() && LuaEqualsJsonText(L, -1, json.text)) {
    out.payload = in.payload;  // unchanged: keep the original bytes exactly
  } else {
    out.format = PayloadFormat::kJson;
    out.payload.clear();
    s = LuaToJson(L, -1, json.Document(), out.payload, "event.payload",
                  produced_bytes_ < limit ? limit - produced_bytes_ : 0);
  }
  lua_pop(L, 1);
  produced_bytes_ += out.payload.size();
  if (s.ok() && produced_bytes_ > limit) {
    return InvalidArgumentError(
        fmt::format("the events returned by one call hold more than {} bytes (max_memory)", limit));
  }
  return s;
}

void LuaProcessor::Fail(Event&& event, ProcessorOutput& out, const std::string& why) {
  ctx_.stats->errors.Add();
  out.EmitSide(Output::kError, std::move(event), "lua: " + why);
}

void LuaProcessor::Process(Event&& event, ProcessorOutput& out) {
  rapidjson::MemoryPoolAllocator<> pool(json_buffer_, sizeof json_buffer_);
  rapidjson::MemoryPoolAllocator<> stack_pool(json_stack_, sizeof json_stack_);
  JsonDocument doc(&pool, 1024, &stack_pool);
  std::optional<LargeJsonDocument> large_doc;
  JsonPayload json;
  if (event.format == PayloadFormat::kJson) {
    // Iterative, depth-limited (util/json_check.h): PushEvent's recursion stays bounded.
    Status parsed_ok;
    if (event.payload.size() <= kPooledParseBytes) {
      parsed_ok = ParseJson(event.payload, doc);
      json.doc = &doc;
    } else {
      parsed_ok = CheckJson(event.payload);  // keeps nothing: the text is read again in Run
      json.text = event.payload;
      json.lazy = &large_doc;
      json.pool = &pool;
    }
    if (!parsed_ok.ok()) {
      ctx_.stats->errors.Add();
      event.format = PayloadFormat::kRaw;  // not JSON: sinks must quote it
      out.EmitSide(Output::kError, std::move(event), parsed_ok.message());
      return;
    }
  }
  produced_.clear();
  produced_bytes_ = 0;
  RunResult result = RunResult::kFiltered;
  Status s = script_->Protected([&] { return Run(event, json, &result); });
  const LuaLimit exceeded = script_->limits().exceeded();
  if (exceeded != LuaLimit::kNone) {
    exceeded_[static_cast<int>(exceeded)]->Add();
    // A call can catch "not enough memory" and still return: the event fails all the same.
    if (s.ok()) s = InvalidArgumentError(script_->limits().Reason());
  }
  memory_->Set(static_cast<int64_t>(script_->limits().used()));
  if (!s.ok()) {
    produced_.clear();
    Fail(std::move(event), out, s.message());
    if (exceeded == LuaLimit::kMemory) RecoverMemory();
    return;
  }
  switch (result) {
    case RunResult::kFiltered:
      ctx_.stats->Dropped("filtered");
      return;
    case RunResult::kOne:
      std::swap(event, scratch_);  // scratch_ keeps the input's storage for the next event
      if (scratch_.payload.capacity() > util::kScratchKeepBytes) {
        std::string().swap(scratch_.payload);  // unless one large event grew it
      }
      Label(event);
      out.Emit(std::move(event));
      return;
    case RunResult::kList:
      if (produced_.empty()) ctx_.stats->Dropped("filtered");
      for (Event& e : produced_) {
        Label(e);
        out.Emit(std::move(e));
      }
      produced_.clear();
      return;
  }
}

Status LuaProcessor::Run(const Event& event, JsonPayload& json, RunResult* outcome) {
  lua_State* L = script_->state();
  const int top = lua_gettop(L);
  script_->PushFunction();
  SEEDANCE_RETURN_IF_ERROR(PushEvent(event, json));
  lua_pushvalue(L, -1);
  lua_insert(L, top + 1);  // keep the input table below the call, to recognise it
  script_->Call(1, 2);
  // Stack: top+1 input table, top+2 result, top+3 the output it goes to (nil: main).
  const int result = top + 2;
  output_.clear();
  if (lua_type(L, top + 3) == LUA_TSTRING) {
    size_t len = 0;
    const char* name = lua_tolstring(L, top + 3, &len);
    output_.assign(name, len);
    const auto& declared = options_.outputs;
    if (output_ != "main" &&
        std::find(declared.begin(), declared.end(), output_) == declared.end()) {
      return InvalidArgumentError(fmt::format(
          "{}() returned output \"{}\", which is not one of this processor's outputs: [{}]",
          options_.script.function, util::SanitizeText(output_, 64), fmt::join(declared, ", ")));
    }
    if (output_ == "main") output_.clear();
  } else if (!lua_isnil(L, top + 3)) {
    return InvalidArgumentError(fmt::format("{}() returned {} as the output; expected its name",
                                            options_.script.function, TypeOf(L, top + 3)));
  }
  if (lua_isnil(L, result) || (lua_type(L, result) == LUA_TBOOLEAN && !lua_toboolean(L, result))) {
    *outcome = RunResult::kFiltered;
    return Status::Ok();
  }
  if (lua_type(L, result) != LUA_TTABLE) {
    return InvalidArgumentError(options_.script.function + "() returned " + TypeOf(L, result) +
                                "; expected the event, a list of events or nil");
  }
  lua_getfield(L, result, "payload");
  const bool is_event = !lua_isnil(L, -1) || lua_rawequal(L, result, top + 1);
  lua_pop(L, 1);
  if (is_event) {
    *outcome = RunResult::kOne;
    return ReadEvent(result, event, json, scratch_);
  }
  *outcome = RunResult::kList;
  const size_t n = lua_objlen(L, result);
  if (options_.max_events_per_call > 0 && n > static_cast<size_t>(options_.max_events_per_call)) {
    events_exceeded_->Add();
    return InvalidArgumentError(fmt::format("{}() returned {} events; max_events_per_call is {}",
                                            options_.script.function, n,
                                            options_.max_events_per_call));
  }
  produced_.reserve(n);
  for (size_t i = 1; i <= n; ++i) {
    lua_rawgeti(L, result, static_cast<int>(i));
    if (!lua_istable(L, -1)) {
      return InvalidArgumentError("element " + std::to_string(i) +
                                  " of the returned list is not an event table");
    }
    Event e;
    Status s = ReadEvent(lua_gettop(L), event, json, e);
    if (!s.ok()) return InvalidArgumentError(fmt::format("event {} of {}: {}", i, n, s.message()));
    produced_.push_back(std::move(e));
    lua_pop(L, 1);
  }
  return Status::Ok();
}

Status ValidateOutputNames(const ParamValue& v) {
  for (const std::string& name : std::get<std::vector<std::string>>(v)) {
    SEEDANCE_RETURN_IF_ERROR(ValidateNamedOutput(name));
  }
  return Status::Ok();
}

struct LuaSettings {
  std::optional<std::string> script;
  std::optional<std::string> code;
  std::string function;
  int64_t instruction_limit = 0;
  std::chrono::nanoseconds max_time{0};
  uint64_t max_memory = 0;
  int64_t max_events_per_call = 0;
  std::vector<std::string> outputs;
  bool jit = false;
  std::chrono::nanoseconds reload_check{0};
  std::vector<std::string> allow;
};

const Options<LuaSettings>& LuaSchema() {
  using S = LuaSettings;
  static const Options<S> o =
      Options<S>()
          .Add(&S::script, {.name = "script", .doc = "path of the Lua file"})
          .Add(&S::code, {.name = "code", .doc = "inline Lua source, instead of script"})
          .Add(&S::function,
               {.name = "function", .doc = "entry function", .default_value = "process"})
          .Int(&S::instruction_limit,
               {.name = "instruction_limit",
                .doc = "Lua VM instructions (and pattern-matching steps) allowed per call (0 = "
                       "unlimited)",
                .default_value = "10000000",
                .validator = IntInRange(0)})
          .Add(&S::max_time, {.name = "max_time",
                              .doc = "wall-clock time allowed per call (0 = unlimited)",
                              .default_value = "1s"})
          .Size(&S::max_memory,
                {.name = "max_memory",
                 .doc = "heap of the script's Lua state, and bytes one call may return; counted "
                        "in limits.memory (0 = unlimited)",
                 .default_value = "64MiB",
                 .validator =
                     [](const ParamValue& v) {
                       const uint64_t bytes = std::get<uint64_t>(v);
                       if (bytes != 0 && bytes < (uint64_t{1} << 20))
                         return InvalidArgumentError("must be at least 1MiB (or 0 for unlimited)");
                       return Status::Ok();
                     }})
          .Int(&S::max_events_per_call,
               {.name = "max_events_per_call",
                .doc = "events one call may return in a list (0 = unlimited)",
                .default_value = "10000",
                .validator = IntInRange(0)})
          .Add(&S::outputs,
               {.name = kNamedOutputsParam,
                .doc = "named outputs the function may send an event to (return event, "
                       "\"name\"); sinks take them with inputs: [name]",
                .validator = ValidateOutputNames})
          .Add(&S::jit, {.name = "jit",
                         .doc = "enable the JIT compiler (faster, but JIT-compiled loops escape "
                                "instruction_limit)",
                         .default_value = "false"})
          .Add(&S::reload_check,
               {.name = "reload_check",
                .doc = "how often the script file is checked for changes (0 = never)",
                .default_value = "250ms"})
          .Add(&S::allow, {.name = "allow",
                           .doc = "sandbox grants: io, os, require, load, ffi, debug",
                           .validator =
                               [](const ParamValue& v) {
                                 for (const auto& g : std::get<std::vector<std::string>>(v)) {
                                   if (g != "io" && g != "os" && g != "require" && g != "load" &&
                                       g != "ffi" && g != "debug") {
                                     return InvalidArgumentError(
                                         "unknown grant \"" + g +
                                         "\"; use io, os, require, load, ffi or debug");
                                   }
                                 }
                                 return Status::Ok();
                               }})
          .Check([](const S& s, const Params& p) {
            if (s.script.has_value() == s.code.has_value()) {
              return InvalidArgumentError(
                  p.Location("script") +
                  ": set exactly one of \"script\" (a file) or \"code\" (inline Lua)");
            }
            return Status::Ok();
          });
  return o;
}

}  // namespace

ProcessorFactory LuaProcessorFactory() {
  ProcessorFactory f;
  f.info.type = "lua";
  f.info.kind = PluginKind::kProcessor;
  f.info.summary =
      "Runs each event through a Lua function (LuaJIT), reloaded when the file changes.";
  f.info.params = LuaSchema().Specs();
  f.create = [](const Params& p, PluginContext& ctx) -> Result<std::unique_ptr<Processor>> {
    SEEDANCE_ASSIGN_OR_RETURN(LuaSettings s, LuaSchema().Bind(p));
    LuaProcessorOptions o;
    o.script.function = s.function;
    o.script.limits.instructions = s.instruction_limit;
    o.script.limits.time = s.max_time;
    o.script.limits.memory = s.max_memory;
    o.script.jit = s.jit;
    o.script.sandbox.allow = s.allow;
    o.script.sandbox.log_name = ctx.name;
    o.script.budget = ctx.memory;
    o.max_events_per_call = s.max_events_per_call;
    o.outputs = s.outputs;
    const std::string path = s.script.value_or("");
    std::string code = s.code.value_or("");
    FileSignature sig;
    if (!path.empty()) {
      if (!StatFile(path, &sig))
        return NotFoundError(p.Location("script") + ": script " + path + " not found");
      SEEDANCE_ASSIGN_OR_RETURN(code, ReadScriptFile(path));
    }
    o.chunk_name = path.empty() ? ctx.name : path;
    auto script = LuaScript::Load(code, o.chunk_name, o.script);
    if (!script) return script.error();
    auto processor =
        std::make_unique<LuaProcessor>(std::move(script).value(), std::move(code), o, ctx);
    if (!path.empty() && s.reload_check.count() > 0 && !ctx.validate_only)
      processor->WatchFile(path, sig, s.reload_check);
    return std::unique_ptr<Processor>(std::move(processor));
  };
  return f;
}

}  // namespace seedance::processors
