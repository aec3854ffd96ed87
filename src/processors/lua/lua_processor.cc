#include "processors/lua/lua_processor.h"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <sys/stat.h>

#include "core/json_check.h"
#include "core/plugin_context.h"
#include "processors/lua/lua_json.h"
#include "processors/lua/lua_script.h"
#include "util/fd_io.h"
#include "util/log.h"

extern "C" {
#include <lauxlib.h>
#include <lua.h>
}

namespace seedance::processors {
namespace {

struct FileSignature {
  int64_t mtime_ns = 0;
  int64_t size = -1;
  uint64_t inode = 0;
  bool operator==(const FileSignature&) const = default;
};

bool Stat(const std::string& path, FileSignature* sig) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  sig->mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  sig->size = st.st_size;
  sig->inode = st.st_ino;
  return true;
}

// Scripts are small; the limit keeps a wrong path (a log file, a device) from costing memory.
constexpr size_t kMaxScriptBytes = 1 << 20;

Result<std::string> ReadFile(const std::string& path) {
  return util::ReadRegularFile(path, kMaxScriptBytes, "script");
}

class LuaProcessor final : public Processor {
 public:
  LuaProcessor(std::unique_ptr<LuaScript> script, std::string path, FileSignature sig,
               std::chrono::nanoseconds reload_check, LuaScriptOptions options, PluginContext ctx)
      : script_(std::move(script)),
        path_(std::move(path)),
        signature_(sig),
        reload_check_ns_(reload_check.count()),
        options_(std::move(options)),
        ctx_(std::move(ctx)) {
    reloads_ok_ =
        &ctx_.metrics->GetCounter("seedance_lua_reloads_total", "Script reloads, by result.",
                                  {{"component", ctx_.name}, {"result", "ok"}});
    reloads_failed_ =
        &ctx_.metrics->GetCounter("seedance_lua_reloads_total", "Script reloads, by result.",
                                  {{"component", ctx_.name}, {"result", "failed"}});
  }

  void Process(Event&& event, ProcessorOutput& out) override;
  void Tick(int64_t now_ns, ProcessorOutput& out) override;

 private:
  // Builds the event table for `event` (payload from `doc` when JSON) on the stack.
  void PushEvent(const Event& event, const rapidjson::Value* doc);
  // Reads the event table at `index` into `out`, based on `in`. kInvalidArgument on bad shape.
  Status ReadEvent(int index, const Event& in, const rapidjson::Value* doc, Event& out);
  void Fail(Event&& event, ProcessorOutput& out, const std::string& why);
  // What a run of the script made of one event.
  enum class RunResult { kOne, kList, kFiltered };
  // Pushes the event, calls the script and reads what it returned: into `scratch_` (kOne) or
  // `produced_` (kList). Every Lua API call in here can raise (memory, a metamethod on a
  // returned table, the instruction budget), so it runs only under LuaScript::Protected.
  Status Run(const Event& event, const rapidjson::Value* parsed, RunResult* result);

  std::unique_ptr<LuaScript> script_;
  std::string path_;
  FileSignature signature_;
  int64_t reload_check_ns_;
  int64_t next_check_ns_ = 0;
  LuaScriptOptions options_;
  PluginContext ctx_;
  observe::Counter* reloads_ok_;
  observe::Counter* reloads_failed_;
  // Per-event scratch, kept between events so the hot path does not allocate: the parsed
  // payload's values and the parser's stack live in these buffers, and the event a script
  // returns is read into `scratch_` (whose strings keep their storage), then swapped with
  // the input.
  char json_buffer_[64 * 1024];
  char json_stack_[16 * 1024];
  Event scratch_;
  std::vector<Event> produced_;
};

// A document whose parse stack comes from a pool too (rapidjson::Document's uses malloc on
// every parse).
using JsonDocument = rapidjson::GenericDocument<rapidjson::UTF8<>, rapidjson::MemoryPoolAllocator<>,
                                                rapidjson::MemoryPoolAllocator<>>;

void LuaProcessor::Tick(int64_t now_ns, ProcessorOutput& /*out*/) {
  if (path_.empty() || reload_check_ns_ <= 0 || now_ns < next_check_ns_) return;
  next_check_ns_ = now_ns + reload_check_ns_;
  FileSignature sig;
  if (!Stat(path_, &sig) || sig == signature_) return;
  signature_ = sig;  // try each version once
  auto code = ReadFile(path_);
  Result<std::unique_ptr<LuaScript>> loaded =
      code ? LuaScript::Load(*code, path_, options_)
           : Result<std::unique_ptr<LuaScript>>(code.error());
  if (!loaded) {
    reloads_failed_->Add();
    SEEDANCE_LOG_ERROR(ctx_.name, "reload of {} refused, the previous version keeps running: {}",
                       path_, loaded.error().message());
    return;
  }
  script_ = std::move(loaded).value();
  reloads_ok_->Add();
  SEEDANCE_LOG_INFO(ctx_.name, "reloaded {}", path_);
}

void LuaProcessor::PushEvent(const Event& event, const rapidjson::Value* doc) {
  lua_State* L = script_->state();
  lua_createtable(L, 0, 7);
  if (doc != nullptr)
    PushJson(L, *doc);
  else
    lua_pushlstring(L, event.payload.data(), event.payload.size());
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
}

Status LuaProcessor::ReadEvent(int index, const Event& in, const rapidjson::Value* doc,
                               Event& out) {
  lua_State* L = script_->state();
  out.id = in.id;
  out.source = in.source;
  out.ingest_time_ns = in.ingest_time_ns;
  out.format = in.format;
  lua_getfield(L, index, "topic");
  if (lua_type(L, -1) == LUA_TSTRING) {
    size_t len = 0;
    const char* s = lua_tolstring(L, -1, &len);
    out.topic.assign(s, len);
  } else {
    out.topic = in.topic;
  }
  lua_pop(L, 1);
  lua_getfield(L, index, "time");
  out.event_time_ns = in.event_time_ns;
  if (lua_type(L, -1) == LUA_TNUMBER) {
    // Seconds since 1970 that fit nanoseconds in 64 bits (up to 2262); NaN, ±inf and anything
    // out of range were converted with undefined behaviour before.
    const double seconds = lua_tonumber(L, -1);
    if (!(seconds >= 0 && seconds < 9.2e9)) {
      lua_pop(L, 1);
      return InvalidArgumentError(
          "event.time must be seconds since 1970 between 0 and 9.2e9 (year 2261), got " +
          std::to_string(seconds));
    }
    out.event_time_ns = static_cast<int64_t>(seconds * 1e9);
  }
  lua_pop(L, 1);
  lua_getfield(L, index, "headers");
  if (lua_istable(L, -1)) {
    out.headers.clear();
    lua_pushnil(L);
    while (lua_next(L, -2) != 0) {
      if (lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) == LUA_TSTRING) {
        out.headers.push_back(Header{lua_tostring(L, -2), lua_tostring(L, -1)});
      }
      lua_pop(L, 1);
    }
  } else {
    out.headers = in.headers;
  }
  lua_pop(L, 1);

  lua_getfield(L, index, "payload");
  Status s;
  if (lua_isnil(L, -1)) {
    out.payload = in.payload;  // a new event table without payload keeps the input's
  } else if (in.format == PayloadFormat::kRaw && lua_type(L, -1) == LUA_TSTRING) {
    size_t len = 0;
    const char* p = lua_tolstring(L, -1, &len);
    out.payload.assign(p, len);
  } else if (doc != nullptr && LuaEqualsJson(L, -1, *doc)) {
    out.payload = in.payload;  // unchanged: keep the original bytes exactly
  } else {
    out.format = PayloadFormat::kJson;
    out.payload.clear();
    s = LuaToJson(L, -1, doc, out.payload);
  }
  lua_pop(L, 1);
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
  const rapidjson::Value* parsed = nullptr;
  if (event.format == PayloadFormat::kJson) {
    // Iterative, depth-limited (core/json_check.h): PushEvent's recursion stays bounded.
    Status parsed_ok = ParseJson(event.payload, doc);
    if (!parsed_ok.ok()) {
      ctx_.stats->errors.Add();
      event.format = PayloadFormat::kRaw;  // not JSON: sinks must quote it
      out.EmitSide(Output::kError, std::move(event), parsed_ok.message());
      return;
    }
    parsed = &doc;
  }
  produced_.clear();
  RunResult result = RunResult::kFiltered;
  Status s = script_->Protected(
      [&] { return Run(event, parsed, &result); });
  if (!s.ok()) {
    produced_.clear();
    Fail(std::move(event), out, s.message());
    return;
  }
  switch (result) {
    case RunResult::kFiltered:
      ctx_.stats->Dropped("filtered");
      return;
    case RunResult::kOne:
      std::swap(event, scratch_);  // scratch_ keeps the input's storage for the next event
      out.Emit(std::move(event));
      return;
    case RunResult::kList:
      if (produced_.empty()) ctx_.stats->Dropped("filtered");
      for (Event& e : produced_) out.Emit(std::move(e));
      produced_.clear();
      return;
  }
}

Status LuaProcessor::Run(const Event& event, const rapidjson::Value* parsed, RunResult* outcome) {
  lua_State* L = script_->state();
  const int top = lua_gettop(L);
  script_->PushFunction();
  PushEvent(event, parsed);
  lua_pushvalue(L, -1);
  lua_insert(L, top + 1);  // keep the input table below the call, to recognise it
  SEEDANCE_RETURN_IF_ERROR(script_->Call(1));
  // Stack: top+1 input table, top+2 result.
  const int result = top + 2;
  if (lua_isnil(L, result) || (lua_type(L, result) == LUA_TBOOLEAN && !lua_toboolean(L, result))) {
    *outcome = RunResult::kFiltered;
    return Status::Ok();
  }
  if (lua_type(L, result) != LUA_TTABLE) {
    return InvalidArgumentError(options_.function + "() returned a " +
                                lua_typename(L, lua_type(L, result)) +
                                "; expected the event, a list of events or nil");
  }
  lua_getfield(L, result, "payload");
  const bool is_event = !lua_isnil(L, -1) || lua_rawequal(L, result, top + 1);
  lua_pop(L, 1);
  if (is_event) {
    *outcome = RunResult::kOne;
    return ReadEvent(result, event, parsed, scratch_);
  }
  *outcome = RunResult::kList;
  const size_t n = lua_objlen(L, result);
  for (size_t i = 1; i <= n; ++i) {
    lua_rawgeti(L, result, static_cast<int>(i));
    if (!lua_istable(L, -1)) {
      return InvalidArgumentError("element " + std::to_string(i) +
                                  " of the returned list is not an event table");
    }
    Event e;
    SEEDANCE_RETURN_IF_ERROR(ReadEvent(lua_gettop(L), event, parsed, e));
    produced_.push_back(std::move(e));
    lua_pop(L, 1);
  }
  return Status::Ok();
}

Status ValidateScriptSource(const Params& p) {
  if (p.Has("script") == p.Has("code")) {
    return InvalidArgumentError(
        p.Location("script") + ": set exactly one of \"script\" (a file) or \"code\" (inline Lua)");
  }
  return Status::Ok();
}

}  // namespace

ProcessorFactory LuaProcessorFactory() {
  ProcessorFactory f;
  f.info.type = "lua";
  f.info.kind = PluginKind::kProcessor;
  f.info.summary =
      "Runs each event through a Lua function (LuaJIT), reloaded when the file changes.";
  f.info.params = {
      {.name = "script", .type = ParamType::kString, .doc = "path of the Lua file"},
      {.name = "code", .type = ParamType::kString, .doc = "inline Lua source, instead of script"},
      {.name = "function",
       .type = ParamType::kString,
       .doc = "entry function",
       .default_value = "process"},
      {.name = "instruction_limit",
       .type = ParamType::kInt,
       .doc = "Lua VM instructions allowed per call (0 = unlimited)",
       .default_value = "10000000"},
      {.name = "jit",
       .type = ParamType::kBool,
       .doc = "enable the JIT compiler (faster, but JIT-compiled loops escape instruction_limit)",
       .default_value = "false"},
      {.name = "reload_check",
       .type = ParamType::kDuration,
       .doc = "how often the script file is checked for changes (0 = never)",
       .default_value = "250ms"},
      {.name = "allow",
       .type = ParamType::kStringList,
       .doc = "sandbox grants: io, os, require, load, ffi, debug",
       .validator =
           [](const ParamValue& v) {
             for (const auto& g : std::get<std::vector<std::string>>(v)) {
               if (g != "io" && g != "os" && g != "require" && g != "load" && g != "ffi" &&
                   g != "debug") {
                 return InvalidArgumentError("unknown grant \"" + g +
                                             "\"; use io, os, require, load, ffi or debug");
               }
             }
             return Status::Ok();
           }},
  };
  f.create = [](const Params& p, PluginContext& ctx) -> Result<std::unique_ptr<Processor>> {
    SEEDANCE_RETURN_IF_ERROR(ValidateScriptSource(p));
    LuaScriptOptions o;
    o.function = p.GetString("function");
    o.instruction_limit = p.GetInt("instruction_limit");
    o.jit = p.GetBool("jit");
    o.allow = p.GetStringList("allow");
    o.log_name = ctx.name;
    std::string path = p.GetString("script");
    std::string code = p.GetString("code");
    FileSignature sig;
    if (!path.empty()) {
      if (!Stat(path, &sig))
        return NotFoundError(p.Location("script") + ": script " + path + " not found");
      SEEDANCE_ASSIGN_OR_RETURN(code, ReadFile(path));
    }
    auto script = LuaScript::Load(code, path.empty() ? ctx.name : path, o);
    if (!script) return script.error();
    return std::unique_ptr<Processor>(new LuaProcessor(std::move(script).value(), path, sig,
                                                       p.GetDuration("reload_check"), o, ctx));
  };
  return f;
}

}  // namespace seedance::processors
