// ParamSpec and Params: the typed parameter schema of a plugin, and the checked values.
//
// A plugin declares its parameters once (name, type, default, required, one-line doc,
// validator), bound to its settings struct (seedance/options.h). The config layer checks
// every YAML section against that schema in one place (unknown keys with a "did you mean"
// hint, type and unit conversion, validators), and `seedance describe` prints the same
// schema. Params is what a plugin's Create() receives and binds: every declared parameter with
// a default is present; optional ones without a default may be absent. Params is an
// immutable value after checking; thread-compatible.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "seedance/status.h"

namespace seedance {

enum class ParamType {
  kString,
  kInt,
  kDouble,
  kBool,
  kDuration,     // "250ms", "5s"
  kSize,         // "64MiB", 4096
  kStringList,   // a YAML list of strings; a single string is a list of one
  kStringMap,    // a YAML map of string to string (e.g. HTTP headers)
  kObject,       // a nested section with its own fields
  kSectionList,  // a YAML list of sections, each with the same fields (a device's tags)
};

// "string", "integer", "duration", ...
std::string_view ParamTypeName(ParamType type);

class Params;

using StringPairs = std::vector<std::pair<std::string, std::string>>;
using SectionList = std::vector<std::shared_ptr<const Params>>;
using ParamValue = std::variant<std::monostate, std::string, int64_t, double, bool,
                                std::chrono::nanoseconds, uint64_t, std::vector<std::string>,
                                StringPairs, std::shared_ptr<const Params>, SectionList>;

struct ParamSpec {
  std::string name;
  ParamType type = ParamType::kString;
  std::string doc;  // one line, shown by `seedance describe`
  bool required = false;
  std::optional<std::string> default_value;  // written as in YAML, e.g. "5s"
  std::vector<std::string> allowed;          // for enum-like strings; empty = any
  std::vector<ParamSpec> fields;             // for kObject and kSectionList
  // For kObject: a plain value of this type is accepted instead of the section
  // (e.g. `concurrency: 4` or `concurrency: {adaptive: true}`).
  std::optional<ParamType> scalar_alternative;
  // Extra check after type conversion; returns kInvalidArgument with what is expected.
  std::function<Status(const ParamValue&)> validator;
};

// A validator for kInt parameters: accepts lo ≤ v ≤ hi. The error says "must be at least lo"
// (hi = INT64_MAX) or "must be lo..hi", unless `message` is given.
std::function<Status(const ParamValue&)> IntInRange(int64_t lo, int64_t hi = INT64_MAX,
                                                    std::string message = {});

class Params {
 public:
  struct Entry {
    ParamValue value;
    std::string location;  // "file:line:column"
  };

  bool Has(const std::string& name) const { return entries_.count(name) != 0; }

  // The value of `name`, or nullptr when it is absent. Plugins do not read values by name:
  // they bind them to their settings (seedance/options.h), where each name is written once.
  const ParamValue* Find(const std::string& name) const;
  // True when `name` holds its declared default (it was not given).
  bool IsDefaulted(const std::string& name) const;

  // True when both hold the same names and values (locations aside).
  bool SameValues(const Params& other) const;

  // "file:line:column" of the value, or of the section when the value was defaulted.
  std::string Location(const std::string& name) const;

  void Set(const std::string& name, ParamValue value, std::string location) {
    entries_[name] = Entry{std::move(value), std::move(location)};
  }
  void set_section_location(std::string location) { section_location_ = std::move(location); }
  // "file:line:column" of the section itself.
  const std::string& section_location() const { return section_location_; }
  const std::map<std::string, Entry>& entries() const { return entries_; }

 private:
  std::map<std::string, Entry> entries_;
  std::string section_location_;
};

}  // namespace seedance
