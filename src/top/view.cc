#include "top/view.h"

#include <fmt/format.h>

#include <algorithm>

namespace seedance::top {
namespace {

int KindOrder(const std::string& kind) {
  if (kind == "source") return 0;
  if (kind == "processor") return 1;
  if (kind == "sink") return 2;
  return 3;
}

std::string Bytes(double b) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (b >= 1024 && unit < 4) {
    b /= 1024;
    ++unit;
  }
  return unit == 0 ? fmt::format("{:.0f} B", b) : fmt::format("{:.1f} {}", b, kUnits[unit]);
}

std::string Maybe(const std::optional<double>& v, double scale = 1, int decimals = 0) {
  return v ? fmt::format("{:.{}f}", *v * scale, decimals) : "-";
}

std::string Rate(double now, const std::optional<double>& before, double seconds) {
  if (!before || seconds <= 0) return "-";
  return fmt::format("{:.1f}", std::max(0.0, now - *before) / seconds);
}

const ComponentFigures* Find(const Snapshot* s, const ComponentFigures& c) {
  if (s == nullptr) return nullptr;
  for (const auto& other : s->components) {
    if (other.kind == c.kind && other.name == c.name) return &other;
  }
  return nullptr;
}

}  // namespace

Snapshot ReadSnapshot(const std::vector<observe::Sample>& samples) {
  Snapshot s;
  std::map<std::pair<std::string, std::string>, ComponentFigures> by_key;  // (kind, name)
  auto component = [&](const std::string& kind, const std::string& name) -> ComponentFigures& {
    ComponentFigures& c = by_key[{kind, name}];
    c.kind = kind;
    c.name = name;
    return c;
  };
  for (const observe::Sample& x : samples) {
    const std::string name = x.Label("component");
    const std::string kind = x.Label("kind");
    const std::string& m = x.name;
    if (m == "seedance_events_dropped_total" && kind == "queue") {
      s.queue_write_failed += x.value;
      continue;
    }
    if (kind != "" && kind != "source" && kind != "processor" && kind != "sink") continue;
    if (m == "seedance_events_in_total") {
      component(kind, name).in = x.value;
    } else if (m == "seedance_events_out_total") {
      component(kind, name).out = x.value;
    } else if (m == "seedance_errors_total") {
      component(kind, name).errors = x.value;
    } else if (m == "seedance_events_dropped_total") {
      component(kind, name).dropped[x.Label("reason")] += x.value;
    } else if (m == "seedance_queue_depth" && kind == "sink") {
      component(kind, name).queue_depth = x.value;
    } else if (m == "seedance_sink_in_flight") {
      component("sink", name).in_flight = x.value;
    } else if (m == "seedance_sink_concurrency_limit") {
      component("sink", name).limit = x.value;
    } else if (m == "seedance_sink_latency_p99_seconds") {
      component("sink", name).p99_seconds = x.value;
    } else if (m == "seedance_mqtt_connected") {
      component(kind, name).state = x.value > 0 ? "up" : "down";
    } else if (m == "seedance_modbus_connected" || m == "seedance_gpu_available") {
      component("source", name).state = x.value > 0 ? "up" : "down";
    } else if (m == "seedance_queue_disk_bytes") {
      s.disk_bytes = x.value;
    } else if (m == "seedance_memory_budget_bytes") {
      s.budget_bytes = x.value;
    } else if (m == "seedance_memory_bytes" && x.Label("tier") == "memory") {
      s.memory_bytes = x.value;
    } else if (m == "seedance_memory_resident_bytes") {
      s.resident_bytes = x.value;
    } else if (m == "seedance_memory_trims_total") {
      s.trims += x.value;
    } else if (m == "seedance_output_events_total") {
      s.outputs[x.Label("output")] = x.value;
    } else if (m == "seedance_build_info") {
      s.version = x.Label("version");
    } else if (m == "seedance_taps_open") {
      s.taps_open = x.value;
    }
  }
  for (auto& [key, c] : by_key) {
    if (!c.kind.empty() && !c.name.empty()) s.components.push_back(std::move(c));
  }
  std::stable_sort(s.components.begin(), s.components.end(), [](const auto& a, const auto& b) {
    return KindOrder(a.kind) < KindOrder(b.kind);
  });
  return s;
}

std::vector<std::string> RenderScreen(const Snapshot& now, const Snapshot* before, double seconds,
                                      const std::string& title, size_t width) {
  std::vector<std::string> lines;
  lines.push_back(title);
  std::string pipeline;
  if (now.disk_bytes) pipeline += "queue on disk " + Bytes(*now.disk_bytes);
  if (now.budget_bytes && *now.budget_bytes > 0) {
    const double used = now.memory_bytes.value_or(0);
    pipeline += fmt::format("{}memory {} of {} ({:.1f}%), {:.0f} trims",
                            pipeline.empty() ? "" : " | ", Bytes(used), Bytes(*now.budget_bytes),
                            100.0 * used / *now.budget_bytes, now.trims);
  }
  if (now.resident_bytes) {
    pipeline += (pipeline.empty() ? "" : " | ") + ("resident " + Bytes(*now.resident_bytes));
  }
  if (now.queue_write_failed > 0) {
    pipeline += fmt::format("{}{:.0f} events the queue could not take",
                            pipeline.empty() ? "" : " | ", now.queue_write_failed);
  }
  if (now.taps_open > 0) {
    pipeline += fmt::format("{}{:.0f} taps open", pipeline.empty() ? "" : " | ", now.taps_open);
  }
  lines.push_back(pipeline.empty() ? "queue in memory" : pipeline);
  std::string outputs = "outputs:";
  for (const auto& [output, n] : now.outputs) outputs += fmt::format(" {} {:.0f}", output, n);
  lines.push_back(outputs);
  lines.emplace_back();

  size_t name_width = 4;
  for (const auto& c : now.components) name_width = std::max(name_width, c.name.size());
  name_width = std::min<size_t>(name_width, 24);
  const auto row = [&](std::string_view kind, std::string_view name, auto&&... cells) {
    std::string n(name.substr(0, name_width));
    return fmt::format("{:<9} {:<{}} {:>12} {:>9} {:>12} {:>9} {:>8} {:>7} {:>6} {:>5} {:>8}  {}",
                       kind, n, name_width, cells...);
  };
  lines.push_back(row("KIND", "NAME", "IN", "IN/S", "OUT", "OUT/S", "ERRORS", "QUEUE", "FLIGHT",
                      "LIMIT", "P99 MS", "STATE / DROPPED"));
  for (const auto& c : now.components) {
    const ComponentFigures* b = Find(before, c);
    const auto was = [&](double ComponentFigures::*field) -> std::optional<double> {
      if (b == nullptr) return std::nullopt;
      return (*b).*field;
    };
    std::string notes = c.state;
    for (const auto& [reason, n] : c.dropped) {
      if (n > 0) notes += fmt::format("{}{}={:.0f}", notes.empty() ? "" : " ", reason, n);
    }
    lines.push_back(row(c.kind, c.name, fmt::format("{:.0f}", c.in),
                        Rate(c.in, was(&ComponentFigures::in), seconds),
                        fmt::format("{:.0f}", c.out),
                        Rate(c.out, was(&ComponentFigures::out), seconds),
                        fmt::format("{:.0f}", c.errors), Maybe(c.queue_depth), Maybe(c.in_flight),
                        Maybe(c.limit), Maybe(c.p99_seconds, 1000, 1), notes));
  }
  if (width > 0) {
    for (auto& line : lines) {
      if (line.size() > width) line.resize(width);
    }
  }
  return lines;
}

}  // namespace seedance::top
