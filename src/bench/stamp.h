// Bench stamps: every generated payload carries "bench_seq" (0-based sequence number) and
// "bench_ns" (Unix time in ns when it was generated). The receiving side finds them again in
// whatever the sinks deliver: JSON arrays, NDJSON, single events or envelopes (where the
// payload may appear as an escaped JSON string).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace seedance::bench {

struct Stamp {
  uint64_t seq = 0;
  int64_t sent_ns = 0;
};

// The stamp fields to put at the start of a JSON object: `"bench_seq":S,"bench_ns":T`.
std::string StampFields(uint64_t seq, int64_t sent_ns);

// Calls `on_stamp` for each stamp in `text`, in order. Returns how many were found.
size_t ForEachStamp(std::string_view text, const std::function<void(const Stamp&)>& on_stamp);

}  // namespace seedance::bench
