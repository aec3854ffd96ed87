// Options<T>: a plugin's (or a runtime section's) parameters, each declared once and bound to
// a member of its settings struct T.
//
// The declaration is the single source of the parameter's name, type, default, doc and
// validator: Specs() is the schema the config layer checks a YAML section against (unknown
// keys, "did you mean", types, units) and `seedance describe` and docs/plugins.md print;
// Bind() fills a T from the checked Params. The parameter's type follows the member's C++
// type, so a member and its parameter cannot disagree, and no code looks a value up by a name
// it could misspell:
//
//   struct TailSettings { std::vector<std::string> paths; uint64_t max_line = 0; };
//   const Options<TailSettings>& TailOptions() {
//     static const Options<TailSettings> o = Options<TailSettings>()
//         .Add(&TailSettings::paths, {.name = "path", .doc = "...", .required = true})
//         .Size(&TailSettings::max_line, {.name = "max_line", .doc = "...", .default_value =
//         "1MiB"});
//     return o;
//   }
//   Result<TailSettings> s = TailOptions().Bind(params);
//
// Immutable once built; Bind() is thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "seedance/param_spec.h"
#include "seedance/result.h"
#include "seedance/status.h"

namespace seedance {
namespace options_internal {

template <typename M>
struct IsOptional : std::false_type {};
template <typename M>
struct IsOptional<std::optional<M>> : std::true_type {};
template <typename M>
struct Unwrap {
  using type = M;
};
template <typename M>
struct Unwrap<std::optional<M>> {
  using type = M;
};

template <typename M>
struct IsDuration : std::false_type {};
template <typename Rep, typename Period>
struct IsDuration<std::chrono::duration<Rep, Period>> : std::true_type {};

template <typename M>
inline constexpr bool kAlwaysFalse = false;

// The parameter type of a member declared with Add().
template <typename M>
constexpr ParamType TypeOf() {
  if constexpr (std::is_same_v<M, std::string>) {
    return ParamType::kString;
  } else if constexpr (std::is_same_v<M, bool>) {
    return ParamType::kBool;
  } else if constexpr (std::is_floating_point_v<M>) {
    return ParamType::kDouble;
  } else if constexpr (IsDuration<M>::value) {
    return ParamType::kDuration;
  } else if constexpr (std::is_same_v<M, std::vector<std::string>>) {
    return ParamType::kStringList;
  } else if constexpr (std::is_same_v<M, StringPairs>) {
    return ParamType::kStringMap;
  } else {
    static_assert(kAlwaysFalse<M>,
                  "Add() takes string, bool, floating, duration, string list and string map "
                  "members; use Int(), Size(), Enum() or Section() for the others");
    return ParamType::kString;
  }
}

// Converts a checked value to the member's type. nullopt when the value has another type
// (the schema and the member disagree: a programming error, reported as kInternal).
template <typename M>
std::optional<M> Convert(const ParamValue& v, ParamType type) {
  if constexpr (std::is_same_v<M, bool>) {
    if (const bool* b = std::get_if<bool>(&v)) return *b;
  } else if constexpr (std::is_integral_v<M>) {
    if (type == ParamType::kSize) {
      if (const uint64_t* u = std::get_if<uint64_t>(&v)) return static_cast<M>(*u);
    } else if (const int64_t* i = std::get_if<int64_t>(&v)) {
      return static_cast<M>(*i);
    }
  } else if constexpr (std::is_floating_point_v<M>) {
    if (const double* d = std::get_if<double>(&v)) return static_cast<M>(*d);
  } else if constexpr (IsDuration<M>::value) {
    if (const auto* d = std::get_if<std::chrono::nanoseconds>(&v)) {
      return std::chrono::duration_cast<M>(*d);
    }
  } else if (const M* m = std::get_if<M>(&v)) {
    return *m;
  }
  return std::nullopt;
}

inline const ParamValue* Find(const Params& p, const std::string& name) { return p.Find(name); }

inline Status WrongType(const Params& p, const std::string& name) {
  return Status(StatusCode::kInternal,
                p.Location(name) + ": " + name + ": value does not match its declared type");
}

}  // namespace options_internal

template <typename T>
class Options {
 public:
  // How a bound parameter reads its value into a T.
  using Apply = std::function<Status(const Params&, T&)>;

  // A string, bool, floating-point, duration (any std::chrono::duration), string-list or
  // string-map member, or std::optional of one (left empty when the parameter is absent).
  // spec.type is set from the member's type.
  template <typename M>
  Options& Add(M T::*member, ParamSpec spec) {
    using V = typename options_internal::Unwrap<M>::type;
    spec.type = options_internal::TypeOf<V>();
    return BindMember<M, V>(member, std::move(spec));
  }
  // An integer member (or std::optional of one) read from an integer parameter.
  template <typename M>
  Options& Int(M T::*member, ParamSpec spec) {
    return Integer(member, std::move(spec), ParamType::kInt);
  }
  // An integer member read from a size parameter ("64MiB", 4096).
  template <typename M>
  Options& Size(M T::*member, ParamSpec spec) {
    return Integer(member, std::move(spec), ParamType::kSize);
  }
  // A member of any type chosen by a string parameter from `choices` (which become the
  // allowed values, in this order).
  template <typename M>
  Options& Enum(M T::*member, ParamSpec spec, std::vector<std::pair<std::string, M>> choices) {
    spec.type = ParamType::kString;
    spec.allowed.clear();
    for (const auto& [name, value] : choices) spec.allowed.push_back(name);
    const std::string name = spec.name;
    specs_.push_back(std::move(spec));
    applies_.push_back([member, name, choices = std::move(choices)](const Params& p, T& out) {
      const ParamValue* v = options_internal::Find(p, name);
      if (v == nullptr) return Status::Ok();
      const std::string* s = std::get_if<std::string>(v);
      if (s == nullptr) return options_internal::WrongType(p, name);
      for (const auto& [text, value] : choices) {
        if (text == *s) {
          out.*member = value;
          return Status::Ok();
        }
      }
      return options_internal::WrongType(p, name);
    });
    return *this;
  }
  // A member of any type read from a string parameter by `parse` (after the spec's validator
  // accepted the text), e.g. `fsync: always | never | 100ms`.
  template <typename M>
  Options& Parse(M T::*member, ParamSpec spec, std::function<Result<M>(const std::string&)> parse) {
    spec.type = ParamType::kString;
    const std::string name = spec.name;
    specs_.push_back(std::move(spec));
    applies_.push_back([member, name, parse = std::move(parse)](const Params& p, T& out) -> Status {
      const ParamValue* v = options_internal::Find(p, name);
      if (v == nullptr) return Status::Ok();
      const std::string* s = std::get_if<std::string>(v);
      if (s == nullptr) return options_internal::WrongType(p, name);
      Result<M> value = parse(*s);
      if (!value)
        return InvalidArgumentError(p.Location(name) + ": " + name + ": " +
                                    value.error().message());
      out.*member = std::move(*value);
      return Status::Ok();
    });
    return *this;
  }
  // A nested section bound to a member of type U (left as it is when the section is absent)
  // or std::optional<U> (set only when the section is given). With `from_int`, a plain
  // integer may stand for the section (spec.scalar_alternative): `concurrency: 4`.
  template <typename M, typename U>
  Options& Section(M T::*member, ParamSpec spec, const Options<U>& nested,
                   std::function<void(int64_t, U&)> from_int = nullptr) {
    static_assert(std::is_same_v<M, U> || std::is_same_v<M, std::optional<U>>,
                  "the member must be the section's type or std::optional of it");
    spec.type = ParamType::kObject;
    spec.fields = nested.Specs();
    if (from_int) spec.scalar_alternative = ParamType::kInt;
    const std::string name = spec.name;
    specs_.push_back(std::move(spec));
    applies_.push_back([member, name, nested, from_int](const Params& p, T& out) -> Status {
      const ParamValue* v = options_internal::Find(p, name);
      if (v == nullptr) return Status::Ok();
      U value{};
      if constexpr (std::is_same_v<M, U>) value = out.*member;
      if (const auto* section = std::get_if<std::shared_ptr<const Params>>(v)) {
        Result<U> bound = nested.Bind(**section, std::move(value));
        if (!bound) return bound.error();
        value = std::move(*bound);
      } else if (const int64_t* i = std::get_if<int64_t>(v); i != nullptr && from_int) {
        from_int(*i, value);
      } else {
        return options_internal::WrongType(p, name);
      }
      out.*member = std::move(value);
      return Status::Ok();
    });
    return *this;
  }
  // A list of sections, each bound with `nested` (a device's tags): `tags: [{name: a, ...}]`.
  // An error in item i is the item's own, located at the item.
  template <typename U>
  Options& SectionList(std::vector<U> T::*member, ParamSpec spec, const Options<U>& nested) {
    spec.type = ParamType::kSectionList;
    spec.fields = nested.Specs();
    const std::string name = spec.name;
    specs_.push_back(std::move(spec));
    applies_.push_back([member, name, nested](const Params& p, T& out) -> Status {
      const ParamValue* v = options_internal::Find(p, name);
      if (v == nullptr) return Status::Ok();
      const auto* items = std::get_if<seedance::SectionList>(v);
      if (items == nullptr) return options_internal::WrongType(p, name);
      std::vector<U> values;
      values.reserve(items->size());
      for (const auto& item : *items) {
        Result<U> bound = nested.Bind(*item);
        if (!bound) return bound.error();
        values.push_back(std::move(*bound));
      }
      out.*member = std::move(values);
      return Status::Ok();
    });
    return *this;
  }
  // Every parameter of `other`, at this level, bound to the member of type U (shared groups
  // of parameters: an MQTT connection, the sink runner's delivery settings).
  template <typename U>
  Options& Include(U T::*member, const Options<U>& other) {
    for (const ParamSpec& s : other.Specs()) specs_.push_back(s);
    applies_.push_back([member, other](const Params& p, T& out) -> Status {
      Result<U> bound = other.Bind(p, std::move(out.*member));
      if (!bound) return bound.error();
      out.*member = std::move(*bound);
      return Status::Ok();
    });
    return *this;
  }
  // Sets `member` to where the section is written ("file:line:column"), for checks made
  // later over several sections (a poll group's tags, checked together).
  Options& SectionLocation(std::string T::*member) {
    applies_.push_back([member](const Params& p, T& out) {
      out.*member = p.section_location();
      return Status::Ok();
    });
    return *this;
  }
  // A check of the bound values together (e.g. min ≤ max), run after binding; its error
  // should name the location (Params::Location of the parameter it is about).
  Options& Check(std::function<Status(const T&, const Params&)> check) {
    applies_.push_back(
        [check = std::move(check)](const Params& p, T& out) { return check(out, p); });
    return *this;
  }

  // The schema, in declaration order.
  const std::vector<ParamSpec>& Specs() const { return specs_; }

  // `initial` with every given or defaulted parameter of `p` bound, then the checks run.
  // REQUIRES: `p` was checked against Specs() by the config layer.
  Result<T> Bind(const Params& p, T initial = T{}) const {
    for (const Apply& apply : applies_) {
      if (Status s = apply(p, initial); !s.ok()) return s;
    }
    return initial;
  }

 private:
  template <typename M>
  Options& Integer(M T::*member, ParamSpec spec, ParamType type) {
    using V = typename options_internal::Unwrap<M>::type;
    static_assert(std::is_integral_v<V> && !std::is_same_v<V, bool>,
                  "Int() and Size() take integers");
    spec.type = type;
    return BindMember<M, V>(member, std::move(spec));
  }
  template <typename M, typename V>
  Options& BindMember(M T::*member, ParamSpec spec) {
    const std::string name = spec.name;
    const ParamType type = spec.type;
    specs_.push_back(std::move(spec));
    applies_.push_back([member, name, type](const Params& p, T& out) -> Status {
      const ParamValue* v = options_internal::Find(p, name);
      if (v == nullptr) return Status::Ok();
      std::optional<V> value = options_internal::Convert<V>(*v, type);
      if (!value) return options_internal::WrongType(p, name);
      out.*member = std::move(*value);
      return Status::Ok();
    });
    return *this;
  }

  std::vector<ParamSpec> specs_;
  std::vector<Apply> applies_;
};

}  // namespace seedance
