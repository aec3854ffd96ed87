#include "util/trace_context.h"

#include <algorithm>

#include "util/strings.h"

namespace seedance::util {
namespace {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // upper case is invalid in traceparent
}

template <size_t N>
bool ReadHex(std::string_view text, std::array<uint8_t, N>* out) {
  if (text.size() != 2 * N) return false;
  for (size_t i = 0; i < N; ++i) {
    const int hi = HexDigit(text[2 * i]);
    const int lo = HexDigit(text[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    (*out)[i] = static_cast<uint8_t>(hi * 16 + lo);
  }
  return std::any_of(out->begin(), out->end(), [](uint8_t b) { return b != 0; });
}

}  // namespace

std::optional<TraceContext> ParseTraceparent(std::string_view text) {
  // 2 + 1 + 32 + 1 + 16 + 1 + 2 = 55
  if (text.size() < 55 || text[2] != '-' || text[35] != '-' || text[52] != '-') {
    return std::nullopt;
  }
  std::array<uint8_t, 1> version{};
  const bool version_zero = text.substr(0, 2) == "00";
  if (!version_zero && (!ReadHex(text.substr(0, 2), &version) || version[0] == 0xff)) {
    return std::nullopt;
  }
  if (version_zero ? text.size() != 55 : (text.size() > 55 && text[55] != '-')) {
    return std::nullopt;
  }
  TraceContext c;
  std::array<uint8_t, 1> flags{};
  if (!ReadHex(text.substr(3, 32), &c.trace_id) || !ReadHex(text.substr(36, 16), &c.span_id)) {
    return std::nullopt;
  }
  const int hi = HexDigit(text[53]);
  const int lo = HexDigit(text[54]);
  if (hi < 0 || lo < 0) return std::nullopt;
  flags[0] = static_cast<uint8_t>(hi * 16 + lo);
  c.flags = flags[0];
  return c;
}

std::string FormatTraceparent(const TraceContext& c) {
  std::string out = "00-";
  out.reserve(55);
  AppendHex(out, std::string_view(reinterpret_cast<const char*>(c.trace_id.data()), 16));
  out += '-';
  AppendHex(out, std::string_view(reinterpret_cast<const char*>(c.span_id.data()), 8));
  out += '-';
  AppendHex(out, std::string_view(reinterpret_cast<const char*>(&c.flags), 1));
  return out;
}

std::optional<TraceContext> EventTraceContext(const Event& e) {
  for (const Header& h : e.headers) {
    if (h.name == "traceparent") return ParseTraceparent(h.value);
  }
  return std::nullopt;
}

}  // namespace seedance::util
