#include "seedance/param_spec.h"

namespace seedance {
std::function<Status(const ParamValue&)> IntInRange(int64_t lo, int64_t hi, std::string message) {
  if (message.empty()) {
    message = hi == INT64_MAX ? "must be at least " + std::to_string(lo)
                              : "must be " + std::to_string(lo) + ".." + std::to_string(hi);
  }
  return [lo, hi, message](const ParamValue& v) {
    const int64_t* n = std::get_if<int64_t>(&v);
    if (n == nullptr || (*n >= lo && *n <= hi))
      return Status::Ok();  // other forms checked elsewhere
    return InvalidArgumentError(message);
  };
}

std::string_view ParamTypeName(ParamType type) {
  switch (type) {
    case ParamType::kString:
      return "string";
    case ParamType::kInt:
      return "integer";
    case ParamType::kDouble:
      return "number";
    case ParamType::kBool:
      return "boolean";
    case ParamType::kDuration:
      return "duration";
    case ParamType::kSize:
      return "size";
    case ParamType::kStringList:
      return "list of strings";
    case ParamType::kStringMap:
      return "map of strings";
    case ParamType::kObject:
      return "section";
    case ParamType::kSectionList:
      return "list of sections";
  }
  return "?";
}

const ParamValue* Params::Find(const std::string& name) const {
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : &it->second.value;
}

bool Params::IsDefaulted(const std::string& name) const {
  auto it = entries_.find(name);
  return it != entries_.end() && it->second.location.empty();
}

namespace {

bool SameSection(const std::shared_ptr<const Params>& x, const std::shared_ptr<const Params>& y) {
  return !x || !y ? x == y : x->SameValues(*y);
}

}  // namespace

bool Params::SameValues(const Params& other) const {
  if (entries_.size() != other.entries_.size()) return false;
  for (auto a = entries_.begin(), b = other.entries_.begin(); a != entries_.end(); ++a, ++b) {
    if (a->first != b->first || a->second.value.index() != b->second.value.index()) return false;
    if (const auto* x = std::get_if<std::shared_ptr<const Params>>(&a->second.value)) {
      if (!SameSection(*x, std::get<std::shared_ptr<const Params>>(b->second.value))) return false;
    } else if (const auto* xs = std::get_if<SectionList>(&a->second.value)) {
      const auto& ys = std::get<SectionList>(b->second.value);
      if (xs->size() != ys.size()) return false;
      for (size_t i = 0; i < xs->size(); ++i) {
        if (!SameSection((*xs)[i], ys[i])) return false;
      }
    } else if (a->second.value != b->second.value) {
      return false;
    }
  }
  return true;
}

std::string Params::Location(const std::string& name) const {
  auto it = entries_.find(name);
  if (it == entries_.end() || it->second.location.empty()) return section_location_;
  return it->second.location;
}

}  // namespace seedance
