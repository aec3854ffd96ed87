#include "pipetest/expect.h"

#include <fmt/format.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "eventtime/event_time.h"
#include "util/json_check.h"

namespace seedance::pipetest {

namespace {

std::string Compact(const rapidjson::Value& v) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  v.Accept(w);
  return std::string(buffer.GetString(), buffer.GetSize());
}

// Numbers compare by value (3 == 3.0), objects by their members whatever the order.
bool Equal(const rapidjson::Value& a, const rapidjson::Value& b) {
  if (a.IsNumber() && b.IsNumber()) return a.GetDouble() == b.GetDouble();
  return a == b;
}

// `want`'s members are in `have` with equal values (nested objects: the same again). Empty
// when they are; else the first field that differs, and how.
std::optional<std::string> SubsetMismatch(const rapidjson::Value& want,
                                          const rapidjson::Value& have, const std::string& at) {
  if (want.IsObject() && have.IsObject()) {
    for (const auto& m : want.GetObject()) {
      const std::string path = at.empty() ? m.name.GetString() : at + "." + m.name.GetString();
      auto it = have.FindMember(m.name);
      if (it == have.MemberEnd()) return fmt::format("field {} missing", path);
      if (auto why = SubsetMismatch(m.value, it->value, path)) return why;
    }
    return std::nullopt;
  }
  if (Equal(want, have)) return std::nullopt;
  return fmt::format("field {}: expected {}, got {}", at.empty() ? "(payload)" : at, Compact(want),
                     Compact(have));
}

std::optional<std::string> ConditionMismatch(const Condition& c, const rapidjson::Value& payload) {
  const rapidjson::Value* v = eventtime::FindField(payload, c.path);
  rapidjson::Document operand;
  (void)ParseJson(c.json, operand);  // written by the tests file's reader: valid JSON
  if (c.op == "exists") {
    const bool want = operand.IsBool() ? operand.GetBool() : true;
    if ((v != nullptr) == want) return std::nullopt;
    return fmt::format("field {} {}", c.path, want ? "missing" : "present");
  }
  if (v == nullptr) return fmt::format("field {} missing (wanted {} {})", c.path, c.op, c.json);
  bool ok = false;
  if (c.op == "==" || c.op == "!=") {
    ok = Equal(*v, operand) == (c.op == "==");
  } else if (v->IsNumber() && operand.IsNumber()) {
    const double a = v->GetDouble(), b = operand.GetDouble();
    ok = c.op == "<" ? a < b : c.op == "<=" ? a <= b : c.op == ">" ? a > b : a >= b;
  } else if (v->IsString() && operand.IsString()) {
    const int cmp = std::string_view(v->GetString()).compare(operand.GetString());
    ok = c.op == "<" ? cmp < 0 : c.op == "<=" ? cmp <= 0 : c.op == ">" ? cmp > 0 : cmp >= 0;
  }
  if (ok) return std::nullopt;
  return fmt::format("field {}: {} is not {} {}", c.path, Compact(*v), c.op, c.json);
}

}  // namespace

std::optional<std::string> Mismatch(const Expected& expected, const Emitted& actual) {
  if (expected.output != actual.output) {
    return fmt::format("output: expected {}, got {}", expected.output, actual.output);
  }
  if (expected.topic && *expected.topic != actual.event.topic) {
    return fmt::format("topic: expected {}, got {}", *expected.topic, actual.event.topic);
  }
  if (expected.reason && actual.reason.find(*expected.reason) == std::string::npos) {
    return fmt::format("reason: expected one containing \"{}\", got \"{}\"", *expected.reason,
                       actual.reason);
  }
  if (!expected.payload && expected.where.empty()) return std::nullopt;
  rapidjson::Document have;
  const bool have_json = ParseJson(actual.event.payload, have).ok();
  if (expected.payload) {
    rapidjson::Document want;
    if (!ParseJson(*expected.payload, want).ok() || !have_json) {  // compared as bytes
      if (*expected.payload != actual.event.payload) {
        return fmt::format("payload: expected {}, got {}", *expected.payload, actual.event.payload);
      }
    } else if (expected.subset) {
      if (auto why = SubsetMismatch(want, have, "")) return why;
    } else if (!Equal(want, have)) {
      if (want.IsObject() && have.IsObject()) {  // name the first field that differs
        if (auto why = SubsetMismatch(want, have, "")) return why;
        for (const auto& m : have.GetObject()) {
          if (!want.HasMember(m.name)) {
            return fmt::format("field {}: not expected ({})", m.name.GetString(), Compact(m.value));
          }
        }
      }
      return fmt::format("payload: expected {}, got {}", Compact(want), Compact(have));
    }
  }
  if (!expected.where.empty() && !have_json) return "payload: not JSON, fields cannot be checked";
  for (const Condition& c : expected.where) {
    if (auto why = ConditionMismatch(c, have)) return why;
  }
  return std::nullopt;
}

std::string Describe(const Emitted& e) {
  std::string s = e.output + " " + e.event.payload;
  if (!e.reason.empty()) s += fmt::format(" (reason: {})", e.reason);
  return s;
}

std::string Describe(const Expected& e) {
  std::string s = e.output;
  if (e.topic) s += " topic " + *e.topic;
  if (e.payload) s += (e.subset ? " with " : " ") + *e.payload;
  for (const Condition& c : e.where) {
    s += fmt::format(" where {} {} {}", c.path, c.op, c.json);
  }
  if (e.reason) s += fmt::format(" (reason contains: {})", *e.reason);
  return s;
}

std::string Diff(const std::vector<Expected>& expected, const std::vector<Emitted>& actual) {
  std::string out;
  bool differs = expected.size() != actual.size();
  const size_t n = std::max(expected.size(), actual.size());
  std::vector<std::string> lines;
  for (size_t i = 0; i < n; ++i) {
    if (i >= expected.size()) {
      lines.push_back(fmt::format("+ [{}] {}    (not expected)", i, Describe(actual[i])));
      continue;
    }
    if (i >= actual.size()) {
      lines.push_back(fmt::format("- [{}] {}    (missing)", i, Describe(expected[i])));
      continue;
    }
    if (auto why = Mismatch(expected[i], actual[i])) {
      differs = true;
      lines.push_back(fmt::format("- [{}] {}", i, Describe(expected[i])));
      lines.push_back(fmt::format("+ [{}] {}", i, Describe(actual[i])));
      lines.push_back(fmt::format("      {}", *why));
    } else {
      lines.push_back(fmt::format("  [{}] {}", i, Describe(actual[i])));
    }
  }
  if (!differs) return "";
  out = fmt::format("expected {} event(s), got {}:\n", expected.size(), actual.size());
  for (const std::string& l : lines) out += "    " + l + "\n";
  return out;
}

}  // namespace seedance::pipetest
