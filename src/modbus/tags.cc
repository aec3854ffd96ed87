#include "modbus/tags.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "util/strings.h"

namespace seedance::modbus {
namespace {

constexpr std::pair<std::string_view, TagType> kTypes[] = {
    {"bool", TagType::kBool},       {"int16", TagType::kInt16},     {"uint16", TagType::kUint16},
    {"int32", TagType::kInt32},     {"uint32", TagType::kUint32},   {"int64", TagType::kInt64},
    {"float32", TagType::kFloat32}, {"float64", TagType::kFloat64}, {"string", TagType::kString},
};

bool IsNumber(TagType t) { return t != TagType::kBool && t != TagType::kString; }

// The value's bytes, most significant first, from `words` 16-bit registers as the device sent
// them (each big-endian on the wire), undoing `order`.
uint64_t Assemble(std::string_view regs, size_t words, WordOrder order) {
  // Word i of the value (0 = most significant) is register i for ABCD and BADC, register
  // words-1-i for CDAB and DCBA; the bytes of each register are swapped for BADC and DCBA.
  const bool reverse_words = order == WordOrder::kCDAB || order == WordOrder::kDCBA;
  const bool swap_bytes = order == WordOrder::kBADC || order == WordOrder::kDCBA;
  uint64_t v = 0;
  for (size_t i = 0; i < words; ++i) {
    const size_t r = reverse_words ? words - 1 - i : i;
    uint8_t hi = static_cast<uint8_t>(regs[2 * r]), lo = static_cast<uint8_t>(regs[2 * r + 1]);
    if (swap_bytes) std::swap(hi, lo);
    v = (v << 16) | (static_cast<uint64_t>(hi) << 8) | lo;
  }
  return v;
}

TagValue Scaled(const Tag& tag, double raw) { return raw * tag.scale + tag.offset; }

template <typename Int>
TagValue Integer(const Tag& tag, Int raw) {
  if (tag.scale == 1 && tag.offset == 0) {
    if constexpr (std::is_signed_v<Int>) {
      return static_cast<int64_t>(raw);
    } else {
      return static_cast<uint64_t>(raw);
    }
  }
  return Scaled(tag, static_cast<double>(raw));
}

}  // namespace

bool ParseTagType(std::string_view text, TagType* type) {
  for (const auto& [name, t] : kTypes) {
    if (name == text) {
      *type = t;
      return true;
    }
  }
  return false;
}

std::string_view TagTypeName(TagType type) {
  for (const auto& [name, t] : kTypes) {
    if (t == type) return name;
  }
  return "?";
}

bool ParseWordOrder(std::string_view text, WordOrder* order) {
  static constexpr std::pair<std::string_view, WordOrder> kOrders[] = {{"ABCD", WordOrder::kABCD},
                                                                       {"CDAB", WordOrder::kCDAB},
                                                                       {"BADC", WordOrder::kBADC},
                                                                       {"DCBA", WordOrder::kDCBA}};
  for (const auto& [name, o] : kOrders) {
    if (name == text) {
      *order = o;
      return true;
    }
  }
  return false;
}

uint32_t TagWidth(const Tag& tag) {
  switch (tag.type) {
    case TagType::kBool:
    case TagType::kInt16:
    case TagType::kUint16:
      return 1;
    case TagType::kInt32:
    case TagType::kUint32:
    case TagType::kFloat32:
      return 2;
    case TagType::kInt64:
    case TagType::kFloat64:
      return 4;
    case TagType::kString:
      return tag.length;
  }
  return 1;
}

Status CheckTags(const std::vector<Tag>& tags, size_t* culprit) {
  size_t unused = 0;
  if (culprit == nullptr) culprit = &unused;
  std::set<std::string> names;
  // Per area: address -> the tag that starts there, to find overlaps in address order.
  std::map<Area, std::map<uint32_t, const Tag*>> by_area;
  for (const Tag& t : tags) {
    *culprit = static_cast<size_t>(&t - tags.data());
    if (t.name.empty()) return InvalidArgumentError("a tag without a name");
    if (!names.insert(t.name).second) {
      return InvalidArgumentError(fmt::format("tag \"{}\" named twice", t.name));
    }
    if (IsBitArea(t.area) && t.type != TagType::kBool) {
      return InvalidArgumentError(
          fmt::format("tag \"{}\": {} hold bits: its type must be bool, not {}", t.name,
                      AreaName(t.area), TagTypeName(t.type)));
    }
    if (t.type == TagType::kString && (t.length == 0 || t.length > kMaxRegistersPerRead)) {
      return InvalidArgumentError(fmt::format(
          "tag \"{}\": a string needs a length of 1-{} registers (2 characters each), not {}",
          t.name, kMaxRegistersPerRead, t.length));
    }
    if (t.type != TagType::kString && t.length != 0) {
      return InvalidArgumentError(
          fmt::format("tag \"{}\": length is for strings; a {} takes {} register(s)", t.name,
                      TagTypeName(t.type), TagWidth(t)));
    }
    if (!IsNumber(t.type) && (t.scale != 1 || t.offset != 0)) {
      return InvalidArgumentError(fmt::format(
          "tag \"{}\": scale and offset apply to numbers, not a {}", t.name, TagTypeName(t.type)));
    }
    if (!std::isfinite(t.scale) || !std::isfinite(t.offset)) {
      return InvalidArgumentError(
          fmt::format("tag \"{}\": scale and offset must be finite", t.name));
    }
    const uint32_t end = uint32_t{t.address} + TagWidth(t);
    if (end > 65536) {
      return InvalidArgumentError(
          fmt::format("tag \"{}\": addresses {}-{} run past the last address, 65535", t.name,
                      t.address, end - 1));
    }
    auto [it, added] = by_area[t.area].emplace(t.address, &t);
    if (!added) {
      return InvalidArgumentError(fmt::format("tags \"{}\" and \"{}\" both start at {} {}",
                                              it->second->name, t.name, AreaName(t.area),
                                              t.address));
    }
  }
  for (const auto& [area, starts] : by_area) {
    const Tag* prev = nullptr;
    for (const auto& [address, tag] : starts) {
      if (prev != nullptr && prev->address + TagWidth(*prev) > address) {
        *culprit = static_cast<size_t>(tag - tags.data());
        return InvalidArgumentError(fmt::format("tags \"{}\" ({} {}-{}) and \"{}\" ({} {}) overlap",
                                                prev->name, AreaName(area), prev->address,
                                                prev->address + TagWidth(*prev) - 1, tag->name,
                                                AreaName(area), address));
      }
      prev = tag;
    }
  }
  return Status::Ok();
}

std::vector<PlannedRead> PlanReads(const std::vector<Tag>& tags, const PlanLimits& limits) {
  std::vector<size_t> order(tags.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::pair(tags[a].area, tags[a].address) < std::pair(tags[b].area, tags[b].address);
  });
  std::vector<PlannedRead> reads;
  for (size_t i : order) {
    const Tag& t = tags[i];
    const uint32_t max = IsBitArea(t.area) ? limits.max_bits : limits.max_registers;
    const uint32_t end = uint32_t{t.address} + TagWidth(t);
    if (!reads.empty()) {
      PlannedRead& r = reads.back();
      const uint32_t r_end = uint32_t{r.address} + r.count;
      if (r.area == t.area && t.address - r_end <= limits.max_gap && end - r.address <= max) {
        r.count = static_cast<uint16_t>(end - r.address);
        r.tags.push_back(i);
        continue;
      }
    }
    reads.push_back(PlannedRead{t.area, t.address, static_cast<uint16_t>(end - t.address), {i}});
  }
  return reads;
}

TagValue DecodeTag(const Tag& tag, const PlannedRead& read, std::string_view data) {
  const size_t at = tag.address - read.address;  // items into the read
  if (IsBitArea(read.area)) {
    return ((static_cast<uint8_t>(data[at / 8]) >> (at % 8)) & 1) != 0;
  }
  std::string_view regs = data.substr(2 * at, 2 * TagWidth(tag));
  switch (tag.type) {
    case TagType::kBool:
      return Assemble(regs, 1, tag.order) != 0;
    case TagType::kInt16:
      return Integer(tag, static_cast<int16_t>(Assemble(regs, 1, tag.order)));
    case TagType::kUint16:
      return Integer(tag, static_cast<uint16_t>(Assemble(regs, 1, tag.order)));
    case TagType::kInt32:
      return Integer(tag, static_cast<int32_t>(Assemble(regs, 2, tag.order)));
    case TagType::kUint32:
      return Integer(tag, static_cast<uint32_t>(Assemble(regs, 2, tag.order)));
    case TagType::kInt64:
      return Integer(tag, static_cast<int64_t>(Assemble(regs, 4, tag.order)));
    case TagType::kFloat32: {
      const uint32_t bits = static_cast<uint32_t>(Assemble(regs, 2, tag.order));
      float f;
      std::memcpy(&f, &bits, sizeof f);
      return Scaled(tag, f);
    }
    case TagType::kFloat64: {
      const uint64_t bits = Assemble(regs, 4, tag.order);
      double d;
      std::memcpy(&d, &bits, sizeof d);
      return Scaled(tag, d);
    }
    case TagType::kString: {
      const bool swap = tag.order == WordOrder::kBADC || tag.order == WordOrder::kDCBA;
      std::string s(regs);
      for (size_t i = 0; swap && i + 1 < s.size(); i += 2) std::swap(s[i], s[i + 1]);
      size_t nul = s.find('\0');
      if (nul != std::string::npos) s.resize(nul);
      while (!s.empty() && s.back() == ' ') s.pop_back();
      return s;
    }
  }
  return false;
}

void AppendTagValueJson(const TagValue& value, std::string& out) {
  std::visit(
      [&out](const auto& v) {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, bool>) {
          out += v ? "true" : "false";
        } else if constexpr (std::is_same_v<V, double>) {
          if (std::isfinite(v)) {
            fmt::format_to(std::back_inserter(out), "{}", v);
          } else {
            out += "null";
          }
        } else if constexpr (std::is_same_v<V, std::string>) {
          util::AppendJsonString(out, v);
        } else {
          fmt::format_to(std::back_inserter(out), "{}", v);
        }
      },
      value);
}

}  // namespace seedance::modbus
