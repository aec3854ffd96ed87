#include "sources/gpu/gpu_sample.h"

#include <fmt/format.h>

#include <cmath>

#include "util/strings.h"

namespace seedance::sources::gpu {
namespace {

void AppendNumber(std::string& out, double value, bool integer) {
  if (!std::isfinite(value)) {
    out += "null";
  } else if (integer && std::fabs(value) < 9.0e18) {
    fmt::format_to(std::back_inserter(out), "{}", static_cast<int64_t>(value));
  } else {
    fmt::format_to(std::back_inserter(out), "{}", value);
  }
}

}  // namespace

const SampleField* GpuSample::Find(std::string_view field) const {
  for (const SampleField& f : fields) {
    if (f.name == field) return &f;
  }
  return nullptr;
}

std::string SampleJson(const GpuSample& s, bool with_time) {
  std::string out;
  out.reserve(512 + 64 * s.processes.size());
  out += '{';
  if (with_time) fmt::format_to(std::back_inserter(out), "\"time_ns\":{},", s.time_ns);
  fmt::format_to(std::back_inserter(out), "\"device\":{},\"uuid\":", s.index);
  util::AppendJsonString(out, s.uuid);
  out += ",\"name\":";
  util::AppendJsonString(out, s.name);
  out += ",\"backend\":";
  util::AppendJsonString(out, s.backend);
  out += ",\"state\":";
  util::AppendJsonString(out, s.state);
  if (!s.error.empty()) {
    out += ",\"error\":";
    util::AppendJsonString(out, s.error);
  }
  for (const SampleField& f : s.fields) {
    out += ",\"";
    out += f.name;  // our own names: no escaping needed
    out += "\":";
    AppendNumber(out, f.value, f.integer);
  }
  if (s.processes_known) {
    out += ",\"processes\":[";
    for (size_t i = 0; i < s.processes.size(); ++i) {
      const ProcessSample& p = s.processes[i];
      if (i > 0) out += ',';
      fmt::format_to(std::back_inserter(out), "{{\"pid\":{},\"name\":", p.pid);
      util::AppendJsonString(out, p.name);
      out += ",\"used_memory_bytes\":";
      if (p.used_bytes < 0) {
        out += "null";
      } else {
        fmt::format_to(std::back_inserter(out), "{}", p.used_bytes);
      }
      out += '}';
    }
    out += ']';
  }
  if (!s.xids.empty()) {
    out += ",\"xids\":[";
    for (size_t i = 0; i < s.xids.size(); ++i) {
      if (i > 0) out += ',';
      fmt::format_to(std::back_inserter(out), "{}", s.xids[i]);
    }
    out += ']';
  }
  out += '}';
  return out;
}

}  // namespace seedance::sources::gpu
