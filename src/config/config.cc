#include "config/config.h"

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "util/fd_io.h"
#include "util/listen_address.h"
#include "util/strings.h"
#include "util/topic_filter.h"
#include "util/units.h"

namespace seedance::config {
namespace {

// A component's name names files (a sink's position in <data_dir>/cursors/NAME, a tail
// source's positions) and metric labels: it must be one file name, and two names one file.
std::string ComponentNameProblem(const std::string& name) {
  if (name.empty()) return "is empty";
  if (name.size() > 128) return "is longer than 128 characters";
  if (name[0] == '.' || name[0] == '-') return "must not start with '.' or '-'";
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-' || c == '.';
    if (!ok) {
      return "may hold only letters, digits, '_', '-' and '.' (it names the component's files "
             "in the data directory)";
    }
  }
  return std::string();
}

// Keys every component section may have besides its plugin's parameters.
const std::vector<std::string> kComponentKeys = {"type", "name"};
const std::vector<std::string> kSinkKeys = {"type", "name", "inputs", "topics"};

// The `pipeline:` section, bound straight into the config.
const Options<PipelineConfig>& PipelineSchema() {
  using S = PipelineConfig;
  static const Options<S> o =
      Options<S>()
          .Int(&S::queue_capacity, {.name = "queue_capacity",
                                    .doc = "events held between stages before sources are paused",
                                    .default_value = "10000",
                                    .validator = IntInRange(1)})
          .Add(&S::shutdown_timeout,
               {.name = "shutdown_timeout",
                .doc = "how long shutdown waits for in-flight batches; the process exits at most "
                       "1s after it, abandoning what still runs",
                .default_value = "5s"});
  return o;
}

class Checker {
 public:
  Checker(std::string file, const EnvLookup& env) : file_(std::move(file)), env_(env) {}

  std::string Loc(const YAML::Node& node) const {
    YAML::Mark m = node.Mark();
    if (m.line < 0) return file_;
    return fmt::format("{}:{}:{}", file_, m.line + 1, m.column + 1);
  }
  void Error(const YAML::Node& node, const std::string& path, const std::string& message) {
    errors_.push_back(path.empty() ? fmt::format("{}: {}", Loc(node), message)
                                   : fmt::format("{}: {}: {}", Loc(node), path, message));
  }
  const std::vector<std::string>& errors() const { return errors_; }
  // Named outputs the processors declared (their `outputs:`), for the sinks' `inputs:`.
  const std::set<std::string>& declared_outputs() const { return declared_outputs_; }

  // The scalar's text with ${VAR} expanded; nullopt (error recorded) when not a scalar.
  std::optional<std::string> Scalar(const YAML::Node& node, const std::string& path,
                                    std::string_view expected) {
    if (!node.IsScalar()) {
      Error(node, path,
            fmt::format("expected {}, got a {}", expected,
                        node.IsMap()        ? "map"
                        : node.IsSequence() ? "list"
                                            : "null"));
      return std::nullopt;
    }
    Result<std::string> expanded = ExpandEnv(node.Scalar(), env_);
    if (!expanded) {
      Error(node, path, expanded.error().message());
      return std::nullopt;
    }
    return std::move(expanded).value();
  }

  std::optional<ParamValue> Convert(const YAML::Node& node, const ParamSpec& spec,
                                    const std::string& path) {
    std::string expected(ParamTypeName(spec.type));
    switch (spec.type) {
      case ParamType::kString: {
        auto s = Scalar(node, path, "a string");
        if (!s) return std::nullopt;
        if (!spec.allowed.empty() &&
            std::find(spec.allowed.begin(), spec.allowed.end(), *s) == spec.allowed.end()) {
          std::string hint = util::ClosestMatch(*s, spec.allowed);
          std::string list;
          for (const auto& a : spec.allowed) list += (list.empty() ? "" : ", ") + a;
          Error(node, path,
                fmt::format("\"{}\" is not one of: {}{}", *s, list,
                            hint.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", hint)));
          return std::nullopt;
        }
        return ParamValue(*s);
      }
      case ParamType::kInt: {
        auto s = Scalar(node, path, "an integer");
        if (!s) return std::nullopt;
        errno = 0;
        char* end = nullptr;
        long long v = std::strtoll(s->c_str(), &end, 10);
        if (s->empty() || *end != '\0' || errno != 0) {
          Error(node, path, fmt::format("expected an integer, got \"{}\"", *s));
          return std::nullopt;
        }
        return ParamValue(static_cast<int64_t>(v));
      }
      case ParamType::kDouble: {
        auto s = Scalar(node, path, "a number");
        if (!s) return std::nullopt;
        char* end = nullptr;
        double v = std::strtod(s->c_str(), &end);
        if (s->empty() || *end != '\0') {
          Error(node, path, fmt::format("expected a number, got \"{}\"", *s));
          return std::nullopt;
        }
        return ParamValue(v);
      }
      case ParamType::kBool: {
        auto s = Scalar(node, path, "true or false");
        if (!s) return std::nullopt;
        if (*s == "true" || *s == "yes" || *s == "on") return ParamValue(true);
        if (*s == "false" || *s == "no" || *s == "off") return ParamValue(false);
        Error(node, path, fmt::format("expected true or false, got \"{}\"", *s));
        return std::nullopt;
      }
      case ParamType::kDuration: {
        auto s = Scalar(node, path, "a duration");
        if (!s) return std::nullopt;
        auto d = util::ParseDuration(*s);
        if (!d) {
          Error(node, path, d.error().message());
          return std::nullopt;
        }
        return ParamValue(*d);
      }
      case ParamType::kSize: {
        auto s = Scalar(node, path, "a size");
        if (!s) return std::nullopt;
        auto v = util::ParseSize(*s);
        if (!v) {
          Error(node, path, v.error().message());
          return std::nullopt;
        }
        return ParamValue(*v);
      }
      case ParamType::kStringList: {
        std::vector<std::string> out;
        if (node.IsScalar()) {
          auto s = Scalar(node, path, "a string or a list of strings");
          if (!s) return std::nullopt;
          out.push_back(*s);
          return ParamValue(std::move(out));
        }
        if (!node.IsSequence()) {
          Error(node, path, "expected a list of strings");
          return std::nullopt;
        }
        bool ok = true;
        for (size_t i = 0; i < node.size(); ++i) {
          auto s = Scalar(node[i], fmt::format("{}[{}]", path, i), "a string");
          if (s)
            out.push_back(*s);
          else
            ok = false;
        }
        if (!ok) return std::nullopt;
        return ParamValue(std::move(out));
      }
      case ParamType::kStringMap: {
        if (!node.IsMap()) {
          Error(node, path, "expected a map of names to strings");
          return std::nullopt;
        }
        StringPairs out;
        bool ok = true;
        for (auto it = node.begin(); it != node.end(); ++it) {
          std::string key = it->first.Scalar();
          auto s = Scalar(it->second, path + "." + key, "a string");
          if (s)
            out.emplace_back(key, *s);
          else
            ok = false;
        }
        if (!ok) return std::nullopt;
        return ParamValue(std::move(out));
      }
      case ParamType::kObject: {
        if (node.IsScalar() && spec.scalar_alternative) {
          ParamSpec scalar = spec;
          scalar.type = *spec.scalar_alternative;
          scalar.scalar_alternative.reset();
          return Convert(node, scalar, path);
        }
        if (!node.IsMap()) {
          Error(node, path, "expected a section (a map of keys)");
          return std::nullopt;
        }
        auto params = std::make_shared<Params>(CheckSection(node, spec.fields, path, {}));
        return ParamValue(std::shared_ptr<const Params>(std::move(params)));
      }
      case ParamType::kSectionList: {
        if (!node.IsSequence()) {
          Error(node, path, "expected a list of sections");
          return std::nullopt;
        }
        SectionList out;
        bool ok = true;
        for (size_t i = 0; i < node.size(); ++i) {
          std::string item_path = fmt::format("{}[{}]", path, i);
          if (!node[i].IsMap()) {
            Error(node[i], item_path, "expected a section (a map of keys)");
            ok = false;
            continue;
          }
          out.push_back(
              std::make_shared<const Params>(CheckSection(node[i], spec.fields, item_path, {})));
        }
        if (!ok) return std::nullopt;
        return ParamValue(std::move(out));
      }
    }
    return std::nullopt;
  }

  // Checks `section` (a map) against `specs`; `extra_keys` are allowed and left to the caller.
  Params CheckSection(const YAML::Node& section, const std::vector<ParamSpec>& specs,
                      const std::string& path, const std::vector<std::string>& extra_keys) {
    Params params;
    params.set_section_location(Loc(section));
    std::vector<std::string> known = extra_keys;
    for (const auto& s : specs) known.push_back(s.name);
    std::set<std::string> seen;
    for (auto it = section.begin(); it != section.end(); ++it) {
      std::string key = it->first.IsScalar() ? it->first.Scalar() : "";
      std::string key_path = path.empty() ? key : path + "." + key;
      if (std::find(extra_keys.begin(), extra_keys.end(), key) != extra_keys.end()) continue;
      auto spec = std::find_if(specs.begin(), specs.end(),
                               [&](const ParamSpec& s) { return s.name == key; });
      if (spec == specs.end()) {
        std::string hint = util::ClosestMatch(key, known);
        std::string msg = fmt::format("unknown key \"{}\"", key);
        if (!hint.empty())
          msg += fmt::format(" (did you mean \"{}\"?)", hint);
        else {
          std::string list;
          for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
          msg += "; known keys: " + list;
        }
        Error(it->first, path, msg);
        continue;
      }
      seen.insert(key);
      std::optional<ParamValue> value = Convert(it->second, *spec, key_path);
      if (!value) continue;
      if (spec->validator) {
        Status s = spec->validator(*value);
        if (!s.ok()) {
          Error(it->second, key_path, s.message());
          continue;
        }
      }
      params.Set(key, std::move(*value), Loc(it->second));
    }
    for (const ParamSpec& spec : specs) {
      if (seen.count(spec.name)) continue;
      if (spec.required) {
        Error(section, path,
              fmt::format("missing required key \"{}\" ({}: {})", spec.name,
                          ParamTypeName(spec.type), spec.doc));
        continue;
      }
      if (spec.default_value) {
        // A list or map default is written in YAML flow style: "[count, sum]".
        const bool collection =
            spec.type == ParamType::kStringList || spec.type == ParamType::kStringMap;
        YAML::Node def = collection && !spec.default_value->empty()
                             ? YAML::Load(*spec.default_value)
                             : YAML::Node(*spec.default_value);
        std::optional<ParamValue> value = Convert(def, spec, path + "." + spec.name);
        if (value) params.Set(spec.name, std::move(*value), "");
      }
    }
    return params;
  }

  void CheckComponents(const YAML::Node& root, const char* key, PluginKind kind, bool required,
                       const PluginRegistry& registry, std::vector<ComponentConfig>* out) {
    YAML::Node list = root[key];
    if (!list) {
      if (required) {
        Error(root, "",
              fmt::format("missing required section \"{}\" (a list of {}s, each "
                          "with a \"type\")",
                          key, PluginKindName(kind)));
      }
      return;
    }
    if (!list.IsSequence()) {
      Error(list, key, fmt::format("expected a list of {}s", PluginKindName(kind)));
      return;
    }
    if (required && list.size() == 0) {
      Error(list, key, fmt::format("needs at least one {}", PluginKindName(kind)));
    }
    std::map<std::string, int> type_counts;
    std::set<std::string> names;
    for (size_t i = 0; i < list.size(); ++i) {
      YAML::Node item = list[i];
      std::string path = fmt::format("{}[{}]", key, i);
      if (!item.IsMap()) {
        Error(item, path, "expected a section with a \"type\" key");
        continue;
      }
      ComponentConfig c;
      c.kind = kind;
      c.location = Loc(item);
      YAML::Node type = item["type"];
      if (!type) {
        Error(item, path, "missing required key \"type\"");
        continue;
      }
      auto type_name = Scalar(type, path + ".type", "a plugin type name");
      if (!type_name) continue;
      const PluginInfo* info = registry.Find(kind, *type_name);
      if (info == nullptr) {
        auto types = registry.TypeNames(kind);
        std::string hint = util::ClosestMatch(*type_name, types);
        std::string list_text;
        for (const auto& t : types) list_text += (list_text.empty() ? "" : ", ") + t;
        Error(type, path + ".type",
              fmt::format("unknown {} type \"{}\"{}; known: {}", PluginKindName(kind), *type_name,
                          hint.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", hint),
                          list_text));
        continue;
      }
      c.type = *type_name;
      int n = ++type_counts[c.type];
      c.name = n == 1 ? c.type : fmt::format("{}_{}", c.type, n);
      if (YAML::Node name = item["name"]) {
        if (auto s = Scalar(name, path + ".name", "a name")) {
          c.name = *s;
          if (std::string why = ComponentNameProblem(c.name); !why.empty()) {
            Error(name, path + ".name", fmt::format("name \"{}\" {}", c.name, why));
          }
        }
      }
      if (!names.insert(c.name).second) {
        Error(item, path,
              fmt::format("duplicate {} name \"{}\" (set a distinct \"name\")",
                          PluginKindName(kind), c.name));
      }
      bool is_sink = kind == PluginKind::kSink;
      if (is_sink) {
        c.inputs = {Output::kMain};
        if (YAML::Node inputs = item["inputs"]) {
          ParamSpec spec{.name = "inputs", .type = ParamType::kStringList};
          if (auto v = Convert(inputs, spec, path + ".inputs")) {
            c.inputs.clear();
            for (const auto& s : std::get<std::vector<std::string>>(*v)) {
              Output o;
              if (ParseOutputName(s, &o)) {
                c.inputs.push_back(o);
              } else if (declared_outputs_.count(s) != 0) {
                c.named_inputs.push_back(s);
              } else {
                Error(inputs, path + ".inputs",
                      fmt::format(
                          "\"{}\" is not an output; use main, error, rejected, stale "
                          "or a named output a processor declares (outputs: [...]){}",
                          s,
                          declared_outputs_.empty()
                              ? ""
                              : fmt::format("; declared: {}", fmt::join(declared_outputs_, ", "))));
              }
            }
          }
        }
      }
      if (is_sink) {
        if (YAML::Node topics = item["topics"]) {
          ParamSpec spec{.name = "topics", .type = ParamType::kStringList};
          if (auto v = Convert(topics, spec, path + ".topics")) {
            c.topics = std::get<std::vector<std::string>>(*v);
            if (c.topics.empty()) {
              Error(topics, path + ".topics", "needs at least one topic filter (or leave it out)");
            }
            for (const std::string& filter : c.topics) {
              if (filter.starts_with("$share/")) {
                Error(topics, path + ".topics",
                      fmt::format("\"{}\": $share/ is for subscriptions, not for matching events",
                                  filter));
              } else if (Status st = util::ValidateTopicFilter(filter); !st.ok()) {
                Error(topics, path + ".topics", fmt::format("\"{}\": {}", filter, st.message()));
              }
            }
          }
        }
      }
      c.params = CheckSection(item, info->params, path, is_sink ? kSinkKeys : kComponentKeys);
      if (kind == PluginKind::kProcessor) {
        for (const std::string& name : NamedOutputs(c.params)) {
          declared_outputs_.insert(name);
        }
      }
      out->push_back(std::move(c));
    }
  }

 private:
  std::string file_;
  const EnvLookup& env_;
  std::vector<std::string> errors_;
  std::set<std::string> declared_outputs_;
};

// YAML maps may repeat a key, and yaml-cpp then keeps both while lookups see only the first:
// a second `topic:` would be silently ignored. Every repeat is an error at its own line.
void FindDuplicateKeys(const YAML::Node& node, Checker& checker, int depth) {
  constexpr int kMaxDepth = 64;  // deeper than any config; yaml-cpp bounds its own parse
  if (depth > kMaxDepth) return;
  if (node.IsSequence()) {
    for (const YAML::Node& item : node) FindDuplicateKeys(item, checker, depth + 1);
    return;
  }
  if (!node.IsMap()) return;
  std::map<std::string, YAML::Node> first;
  for (auto it = node.begin(); it != node.end(); ++it) {
    if (it->first.IsScalar()) {
      auto [at, inserted] = first.emplace(it->first.Scalar(), it->first);
      if (!inserted) {
        checker.Error(it->first, "",
                      fmt::format("duplicate key \"{}\" (first at {})", it->first.Scalar(),
                                  checker.Loc(at->second)));
      }
    }
    FindDuplicateKeys(it->second, checker, depth + 1);
  }
}

Result<PipelineConfig> Check(const YAML::Node& root, const std::string& file,
                             const PluginRegistry& registry, const EnvLookup& env) {
  Checker checker(file, env);
  PipelineConfig config;
  config.file = file;
  if (!root.IsMap()) {
    return InvalidArgumentError(
        fmt::format("{}: expected a YAML map with \"sources\" and \"sinks\"", checker.Loc(root)));
  }
  FindDuplicateKeys(root, checker, 0);
  static const std::vector<std::string> kTop = {
      "sources", "processors", "sinks", "pipeline", "queue", "limits", "metrics", "tracing", "log"};
  for (auto it = root.begin(); it != root.end(); ++it) {
    std::string key = it->first.Scalar();
    if (std::find(kTop.begin(), kTop.end(), key) == kTop.end()) {
      std::string hint = util::ClosestMatch(key, kTop);
      checker.Error(it->first, "",
                    fmt::format("unknown top-level key \"{}\"{}", key,
                                hint.empty() ? "; known: sources, processors, sinks, pipeline, "
                                               "queue, limits, metrics, tracing, log"
                                             : fmt::format(" (did you mean \"{}\"?)", hint)));
    }
  }
  checker.CheckComponents(root, "sources", PluginKind::kSource, true, registry, &config.sources);
  checker.CheckComponents(root, "processors", PluginKind::kProcessor, false, registry,
                          &config.processors);
  checker.CheckComponents(root, "sinks", PluginKind::kSink, true, registry, &config.sinks);
  auto section = [&](const char* key, const std::vector<ParamSpec>& specs) {
    YAML::Node node = root[key];
    if (!node) return checker.CheckSection(YAML::Node(YAML::NodeType::Map), specs, key, {});
    if (!node.IsMap()) {
      checker.Error(node, key, "expected a section (a map of keys)");
      return Params();
    }
    return checker.CheckSection(node, specs, key, {});
  };
  // Each runtime section is declared by its owner and bound into its typed settings.
  auto bind = [&](const char* key, const auto& schema, auto initial) {
    Params given = section(key, schema.Specs());
    auto bound = schema.Bind(given, std::move(initial));
    if (!bound) {
      checker.Error(root[key] ? root[key] : root, key, bound.error().message());
      return decltype(initial){};
    }
    return std::move(bound).value();
  };
  config = bind("pipeline", PipelineSchema(), std::move(config));
  config.queue = bind("queue", storage::QueueSchema(), storage::QueueSettings{});
  config.limits = bind("limits", governor::LimitsSchema(), governor::LimitsSettings{});
  if (config.limits.memory > 0) {
    const YAML::Node memory = root["limits"]["memory"];
    if (!config.queue.durable) {
      checker.Error(memory, "limits.memory",
                    "needs the disk tier (queue.buffer: disk); with buffer: memory, "
                    "pipeline.queue_capacity bounds the queues instead");
    } else if (config.limits.memory < (1u << 20)) {
      checker.Error(memory, "limits.memory",
                    fmt::format("at least 1MiB, got {} bytes", config.limits.memory));
    }
    if (config.limits.step.count() <= 0) {
      checker.Error(root["limits"]["step"], "limits.step", "must be above 0");
    }
  }
  config.metrics = bind("metrics", observe::MetricsSchema(), observe::MetricsSettings{});
  config.tracing = bind("tracing", observe::TracingSchema(), observe::TracingSettings{});
  config.log = bind("log", util::LogSchema(), util::LogSettings{});
  if (!checker.errors().empty()) {
    std::string all;
    for (const auto& e : checker.errors()) all += (all.empty() ? "" : "\n") + e;
    return InvalidArgumentError(all);
  }
  return config;
}

// Where a second, non-empty YAML document starts, if there is one. Not YAML::LoadAll: in
// yaml-cpp 0.7 it loops for ever, allocating, on input such as "," (jbeder/yaml-cpp#1319,
// found by tests/fuzz/config_fuzz.cc); the parser is asked for two documents at most.
class DocumentStarts : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override { mark_ = mark; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override { content_ = true; }
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {
    content_ = true;
  }
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    content_ = true;
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    content_ = true;
  }
  void OnMapEnd() override {}
  bool content() const { return content_; }
  const YAML::Mark& mark() const { return mark_; }

 private:
  bool content_ = false;
  YAML::Mark mark_;
};

std::optional<YAML::Mark> SecondDocument(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentStarts first, second;
  if (!parser.HandleNextDocument(first)) return std::nullopt;
  if (!parser.HandleNextDocument(second) || !second.content()) return std::nullopt;
  return second.mark();
}

}  // namespace

Result<PipelineConfig> LoadConfigText(const std::string& text, const std::string& file,
                                      const PluginRegistry& registry, const EnvLookup& env) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
    if (root.IsNull()) {
      return InvalidArgumentError(fmt::format(
          "{}:1:1: no configuration in the file (empty, only comments, or null); expected a map "
          "with \"sources\" and \"sinks\"",
          file));
    }
    // A second document is easy to add by mistake (a pasted "---") and would be ignored.
    if (std::optional<YAML::Mark> second = SecondDocument(text)) {
      return InvalidArgumentError(
          fmt::format("{}:{}: a second YAML document starts here; a config file holds exactly one",
                      file, second->line + 1));
    }
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(
        fmt::format("{}:{}:{}: invalid YAML: {}", file, e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  try {
    return Check(root, file, registry, env);
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(
        fmt::format("{}:{}:{}: {}", file, e.mark.line + 1, e.mark.column + 1, e.msg));
  }
}

Status AddFilterScript(PipelineConfig* config, const std::string& script_path,
                       const PluginRegistry& registry) {
  const PluginInfo* lua = registry.Find(PluginKind::kProcessor, "lua");
  if (lua == nullptr) return InvalidArgumentError("--filter needs the lua processor");
  YAML::Node node(YAML::NodeType::Map);
  node["script"] = script_path;
  EnvLookup no_env = [](const std::string&) { return std::optional<std::string>(); };
  Checker checker("--filter", no_env);
  ComponentConfig c;
  c.kind = PluginKind::kProcessor;
  c.type = "lua";
  c.name = "filter";
  c.location = "--filter " + script_path;
  c.params = checker.CheckSection(node, lua->params, "--filter", {});
  if (!checker.errors().empty()) return InvalidArgumentError(checker.errors().front());
  for (const auto& p : config->processors) {
    if (p.name == "filter") {
      return InvalidArgumentError(p.location +
                                  ": a processor is already named \"filter\"; "
                                  "rename it to use --filter");
    }
  }
  config->processors.insert(config->processors.begin(), std::move(c));
  return Status::Ok();
}

Result<PipelineConfig> LoadConfigFile(const std::string& path, const PluginRegistry& registry,
                                      const EnvLookup& env) {
  constexpr size_t kMaxConfigBytes = 16 << 20;
  auto text = util::ReadRegularFile(path, kMaxConfigBytes, "config file");
  if (!text) return text.error();
  return LoadConfigText(*text, path, registry, env);
}

}  // namespace seedance::config
