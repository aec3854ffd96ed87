#include "bench/stamp.h"

#include <fmt/format.h>

#include <charconv>

namespace seedance::bench {
namespace {

// After a field name: skips an optional escaped or plain closing quote, spaces and the colon,
// then parses an integer. Returns false when no integer follows.
template <typename T>
bool ParseValueAfter(std::string_view text, size_t pos, T* value, size_t* end) {
  while (pos < text.size() && (text[pos] == '\\' || text[pos] == '"' || text[pos] == ' ')) ++pos;
  if (pos >= text.size() || text[pos] != ':') return false;
  ++pos;
  while (pos < text.size() && text[pos] == ' ') ++pos;
  auto [ptr, ec] = std::from_chars(text.data() + pos, text.data() + text.size(), *value);
  if (ec != std::errc()) return false;
  *end = static_cast<size_t>(ptr - text.data());
  return true;
}

}  // namespace

std::string StampFields(uint64_t seq, int64_t sent_ns) {
  return fmt::format("\"bench_seq\":{},\"bench_ns\":{}", seq, sent_ns);
}

size_t ForEachStamp(std::string_view text, const std::function<void(const Stamp&)>& on_stamp) {
  constexpr std::string_view kSeq = "bench_seq";
  constexpr std::string_view kNs = "bench_ns";
  size_t found = 0;
  size_t pos = 0;
  while ((pos = text.find(kSeq, pos)) != std::string_view::npos) {
    Stamp stamp;
    size_t end = 0;
    if (!ParseValueAfter(text, pos + kSeq.size(), &stamp.seq, &end)) {
      pos += kSeq.size();
      continue;
    }
    size_t ns = text.find(kNs, end);
    const size_t next_seq = text.find(kSeq, end);
    if (ns == std::string_view::npos || (next_seq != std::string_view::npos && ns > next_seq) ||
        !ParseValueAfter(text, ns + kNs.size(), &stamp.sent_ns, &end)) {
      pos = end;
      continue;
    }
    on_stamp(stamp);
    ++found;
    pos = end;
  }
  return found;
}

}  // namespace seedance::bench
