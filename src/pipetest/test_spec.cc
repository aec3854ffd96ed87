#include "pipetest/test_spec.h"

#include <fmt/format.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "eventtime/event_time.h"
#include "util/units.h"

namespace seedance::pipetest {

namespace {

constexpr std::chrono::hours kMaxAdvance{7 * 24};

// Collects every problem of a file, each with file:line.
class Problems {
 public:
  explicit Problems(std::string file) : file_(std::move(file)) {}
  std::string Where(const YAML::Node& node) const {
    return fmt::format("{}:{}", file_, node.Mark().line + 1);
  }
  void Add(const YAML::Node& node, const std::string& what) {
    list_.push_back(Where(node) + ": " + what);
  }
  bool empty() const { return list_.empty(); }
  Status ToStatus() const {
    std::string all;
    for (const std::string& p : list_) all += (all.empty() ? "" : "\n") + p;
    return InvalidArgumentError(all);
  }

 private:
  std::string file_;
  std::vector<std::string> list_;
};

// A plain YAML scalar as JSON: null, true/false, a number, else a string. A quoted scalar is
// always a string.
void WriteScalar(const YAML::Node& node, rapidjson::Writer<rapidjson::StringBuffer>& w) {
  const std::string& s = node.Scalar();
  if (node.Tag() != "!") {
    if (s.empty() || s == "null" || s == "~") {
      w.Null();
      return;
    }
    if (s == "true" || s == "false") {
      w.Bool(s == "true");
      return;
    }
    char* end = nullptr;
    errno = 0;
    const double d = std::strtod(s.c_str(), &end);
    if (end == s.c_str() + s.size() && errno == 0 && std::isfinite(d) &&
        s.find_first_of("xXnN") == std::string::npos) {
      const long long i = std::strtoll(s.c_str(), &end, 10);
      if (end == s.c_str() + s.size() && errno == 0) {
        w.Int64(i);
      } else {
        w.Double(d);
      }
      return;
    }
  }
  w.String(s.c_str(), static_cast<rapidjson::SizeType>(s.size()));
}

void WriteJson(const YAML::Node& node, rapidjson::Writer<rapidjson::StringBuffer>& w) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      w.StartObject();
      for (const auto& kv : node) {
        const std::string& key = kv.first.Scalar();
        w.Key(key.c_str(), static_cast<rapidjson::SizeType>(key.size()));
        WriteJson(kv.second, w);
      }
      w.EndObject();
      return;
    case YAML::NodeType::Sequence:
      w.StartArray();
      for (const auto& item : node) WriteJson(item, w);
      w.EndArray();
      return;
    case YAML::NodeType::Scalar:
      return WriteScalar(node, w);
    default:
      w.Null();
  }
}

std::string ToJson(const YAML::Node& node) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  WriteJson(node, w);
  return std::string(buffer.GetString(), buffer.GetSize());
}

// A payload as given: a string is the bytes themselves, anything else JSON.
std::string PayloadText(const YAML::Node& node) {
  return node.IsScalar() ? node.Scalar() : ToJson(node);
}

bool CheckKeys(const YAML::Node& map, const std::set<std::string>& known, const char* what,
               Problems& problems) {
  if (!map.IsMap()) {
    problems.Add(map, fmt::format("{} must be a map", what));
    return false;
  }
  bool ok = true;
  for (const auto& kv : map) {
    const std::string key = kv.first.Scalar();
    if (known.count(key) == 0) {
      std::string list;
      for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
      problems.Add(kv.first, fmt::format("unknown key \"{}\" in {} (known: {})", key, what, list));
      ok = false;
    }
  }
  return ok;
}

std::optional<int64_t> Time(const YAML::Node& node, Problems& problems) {
  auto t = eventtime::ParseRfc3339(node.Scalar());
  if (!t) {
    problems.Add(node, fmt::format("\"{}\" is not a time (RFC 3339, e.g. "
                                   "2026-01-01T00:00:05Z): {}",
                                   node.Scalar(), t.error().message()));
    return std::nullopt;
  }
  return *t;
}

void ParseStep(const YAML::Node& node, TestCase& test, Problems& problems) {
  if (!CheckKeys(node, {"payload", "topic", "time", "headers", "format", "advance", "watermark"},
                 "an input step", problems)) {
    return;
  }
  Step step;
  if (node["advance"]) {
    step.kind = Step::Kind::kAdvance;
    auto d = util::ParseDuration(node["advance"].Scalar());
    if (!d || d->count() < 0) {
      problems.Add(node["advance"], "advance: a duration such as 10s or 250ms");
      return;
    }
    if (*d > kMaxAdvance) {  // it ticks every 100 ms of it: bounded work
      problems.Add(node["advance"], "advance: at most 168h (7 days) in one step");
      return;
    }
    step.ns = d->count();
  } else if (node["watermark"]) {
    step.kind = Step::Kind::kWatermark;
    auto t = Time(node["watermark"], problems);
    if (!t) return;
    step.ns = *t;
  } else {
    if (!node["payload"]) {
      problems.Add(node, "an input step is an event (payload:), advance: or watermark:");
      return;
    }
    step.payload = PayloadText(node["payload"]);
    if (node["topic"]) step.topic = node["topic"].Scalar();
    if (node["time"]) {
      step.time_ns = Time(node["time"], problems);
      if (!step.time_ns) return;
    }
    if (const YAML::Node f = node["format"]) {
      if (f.Scalar() == "raw") {
        step.format = PayloadFormat::kRaw;
      } else if (f.Scalar() != "json") {
        problems.Add(f, "format: json or raw");
      }
    }
    if (const YAML::Node h = node["headers"]) {
      if (!h.IsMap()) {
        problems.Add(h, "headers must be a map of names to values");
      } else {
        for (const auto& kv : h) step.headers.push_back({kv.first.Scalar(), kv.second.Scalar()});
      }
    }
  }
  test.steps.push_back(std::move(step));
}

void ParseExpected(const YAML::Node& node, TestCase& test, Problems& problems) {
  if (!CheckKeys(node, {"output", "payload", "match", "where", "reason", "topic"},
                 "an expected event", problems)) {
    return;
  }
  Expected e;
  e.location = problems.Where(node);
  if (node["output"]) e.output = node["output"].Scalar();
  if (node["payload"]) e.payload = PayloadText(node["payload"]);
  if (const YAML::Node m = node["match"]) {
    if (m.Scalar() == "subset") {
      e.subset = true;
    } else if (m.Scalar() != "exact") {
      problems.Add(m, "match: exact (the default) or subset");
    }
    if (e.subset && !(node["payload"] && node["payload"].IsMap())) {
      problems.Add(m, "match: subset needs a payload map");
    }
  }
  if (node["reason"]) e.reason = node["reason"].Scalar();
  if (node["topic"]) e.topic = node["topic"].Scalar();
  if (const YAML::Node where = node["where"]) {
    if (!where.IsMap()) {
      problems.Add(where, "where: a map of field paths to conditions, e.g. {count: {\">=\": 3}}");
    } else {
      static const std::set<std::string> kOps = {"==", "!=", "<", "<=", ">", ">=", "exists"};
      for (const auto& field : where) {
        if (!field.second.IsMap()) {
          problems.Add(field.second, "a condition is a map such as {\">\": 20}");
          continue;
        }
        for (const auto& cond : field.second) {
          const std::string op = cond.first.Scalar();
          if (kOps.count(op) == 0) {
            problems.Add(cond.first,
                         fmt::format("unknown condition \"{}\" (== != < <= > >= exists)", op));
            continue;
          }
          e.where.push_back(Condition{field.first.Scalar(), op, ToJson(cond.second)});
        }
      }
    }
  }
  test.expect.push_back(std::move(e));
}

void ParseTest(const YAML::Node& node, int64_t clock_ns, std::vector<TestCase>& out,
               Problems& problems) {
  if (!CheckKeys(node, {"name", "processors", "clock", "input", "expect"}, "a test", problems)) {
    return;
  }
  TestCase test;
  test.location = problems.Where(node);
  test.clock_ns = clock_ns;
  if (!node["name"]) problems.Add(node, "a test needs a name");
  test.name = node["name"] ? node["name"].Scalar() : test.location;
  if (const YAML::Node p = node["processors"]) {
    if (p.IsSequence()) {
      for (const auto& n : p) test.processors.push_back(n.Scalar());
    } else if (p.IsScalar()) {
      test.processors.push_back(p.Scalar());
    } else {
      problems.Add(p, "processors: a list of processor names");
    }
  }
  if (const YAML::Node c = node["clock"]) {
    if (auto t = Time(c, problems)) test.clock_ns = *t;
  }
  const YAML::Node input = node["input"];
  if (!input || !input.IsSequence()) {
    problems.Add(input ? input : node, "input: a list of events and steps");
  } else {
    for (const auto& step : input) ParseStep(step, test, problems);
  }
  const YAML::Node expect = node["expect"];
  if (!expect) {
    problems.Add(node, "expect: a list of events, or `dropped` when nothing comes out");
  } else if (expect.IsScalar() && expect.Scalar() == "dropped") {
    // nothing comes out
  } else if (!expect.IsSequence()) {
    problems.Add(expect, "expect: a list of events, or `dropped` when nothing comes out");
  } else {
    for (const auto& e : expect) ParseExpected(e, test, problems);
  }
  out.push_back(std::move(test));
}

}  // namespace

Result<std::vector<TestCase>> ParseTests(const std::string& text, const std::string& file) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(
        fmt::format("{}:{}: not valid YAML: {}", file, e.mark.line + 1, e.msg));
  }
  Problems problems(file);
  std::vector<TestCase> tests;
  if (!root.IsMap() || !root["tests"] || !root["tests"].IsSequence()) {
    return InvalidArgumentError(file + ":1: a tests file is a map with a `tests:` list");
  }
  CheckKeys(root, {"tests", "clock"}, "the tests file", problems);
  int64_t clock_ns = kDefaultClockNs;
  if (const YAML::Node c = root["clock"]) {
    if (auto t = Time(c, problems)) clock_ns = *t;
  }
  std::set<std::string> names;
  for (const auto& node : root["tests"]) {
    ParseTest(node, clock_ns, tests, problems);
    if (!tests.empty() && !names.insert(tests.back().name).second) {
      problems.Add(node, fmt::format("a second test named \"{}\"", tests.back().name));
    }
  }
  if (tests.empty() && problems.empty()) {
    return InvalidArgumentError(file + ":1: the tests list is empty");
  }
  if (!problems.empty()) return problems.ToStatus();
  return tests;
}

Result<std::vector<TestCase>> LoadTests(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError("cannot read the tests file " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return ParseTests(text.str(), path);
}

}  // namespace seedance::pipetest
