#include "bench/compare.h"

#include <fmt/format.h>
#include <rapidjson/document.h>

#include <algorithm>
#include <cmath>

#include "bench/report.h"
#include "util/strings.h"

namespace seedance::bench {
namespace {

struct Figure {
  const char* name;  // dotted path in the report
  bool higher_is_better;
  bool gated;
};

constexpr Figure kFigures[] = {
    {"throughput_eps", true, true},  {"latency_ms.p50", false, true},
    {"latency_ms.p95", false, true}, {"latency_ms.p99", false, true},
    {"rss_peak_kb", false, true},    {"rss_idle_kb", false, true},
    {"cpu_s", false, true},          {"ready_ms", false, true},
    {"events_in", true, false},      {"events_out", true, false},
    {"duplicates", false, false},    {"latency_ms.max", false, false},
};

// The value at dotted `path` in `object`, if it is a number.
bool Lookup(const rapidjson::Value& object, const std::string& path, double* out) {
  const rapidjson::Value* v = &object;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string key = path.substr(start, dot == std::string::npos ? dot : dot - start);
    if (!v->IsObject()) return false;
    auto it = v->FindMember(key.c_str());
    if (it == v->MemberEnd()) return false;
    v = &it->value;
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (!v->IsNumber()) return false;
  *out = v->GetDouble();
  return true;
}

struct Side {
  rapidjson::Document doc;
  int runs = 1;
  // Median and spread of `figure` over the runs (or the top-level value for one run).
  bool Get(const std::string& figure, double* median, double* spread) const {
    *spread = -1;
    auto it = doc.FindMember("runs");
    if (it != doc.MemberEnd() && it->value.IsArray() && it->value.Size() > 1) {
      std::vector<double> values;
      for (const auto& run : it->value.GetArray()) {
        double v = 0;
        if (Lookup(run, figure, &v)) values.push_back(v);
      }
      if (!values.empty()) {
        *median = Median(values);
        auto [lo, hi] = std::minmax_element(values.begin(), values.end());
        if (*median != 0) *spread = (*hi - *lo) / std::fabs(*median) * 100;
        return true;
      }
    }
    return Lookup(doc, figure, median);
  }
};

Status LoadSide(const std::string& json, const char* which, Side* side) {
  side->doc.Parse(json.c_str(), json.size());
  if (side->doc.HasParseError() || !side->doc.IsObject()) {
    return Status(StatusCode::kInvalidArgument, fmt::format("{}: not a JSON object", which));
  }
  double probe = 0;
  if (!Lookup(side->doc, "throughput_eps", &probe) ||
      !Lookup(side->doc, "latency_ms.p99", &probe)) {
    return Status(
        StatusCode::kInvalidArgument,
        fmt::format("{}: not a seedance bench report (no throughput_eps / latency_ms)", which));
  }
  auto it = side->doc.FindMember("runs");
  if (it != side->doc.MemberEnd() && it->value.IsArray() && it->value.Size() > 0) {
    side->runs = static_cast<int>(it->value.Size());
  }
  return Status::Ok();
}

}  // namespace

std::vector<std::string> ComparableFigures() {
  std::vector<std::string> names;
  for (const auto& f : kFigures) names.emplace_back(f.name);
  return names;
}

Result<double> ParsePercent(const std::string& text) {
  std::string t = text;
  if (!t.empty() && t.back() == '%') t.pop_back();
  char* end = nullptr;
  double v = std::strtod(t.c_str(), &end);
  if (t.empty() || end != t.c_str() + t.size() || !(v >= 0) || std::isinf(v)) {
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("expected a percentage such as 5% or 2.5%, got \"{}\"", text));
  }
  return v;
}

Result<Comparison> CompareReports(const std::string& baseline_json, const std::string& target_json,
                                  const CompareOptions& options) {
  const auto names = ComparableFigures();
  for (const auto& [name, pct] : options.metric_threshold_pct) {
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      std::string hint = util::ClosestMatch(name, names);
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("no figure \"{}\"{}; figures: {}", name,
                                hint.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", hint),
                                fmt::join(names, ", ")));
    }
  }
  Side baseline, target;
  if (Status s = LoadSide(baseline_json, "baseline", &baseline); !s.ok()) return s;
  if (Status s = LoadSide(target_json, "target", &target); !s.ok()) return s;
  Comparison c;
  c.baseline_runs = baseline.runs;
  c.target_runs = target.runs;
  for (const auto& f : kFigures) {
    CompareRow row;
    row.figure = f.name;
    row.gated = f.gated;
    row.higher_is_better = f.higher_is_better;
    auto custom = options.metric_threshold_pct.find(f.name);
    row.threshold_pct =
        custom != options.metric_threshold_pct.end() ? custom->second : options.threshold_pct;
    if (!baseline.Get(f.name, &row.baseline, &row.baseline_spread_pct) ||
        !target.Get(f.name, &row.target, &row.target_spread_pct)) {
      continue;  // older reports may lack a figure
    }
    if (row.baseline == 0) {
      row.change_pct = row.target == 0 ? 0 : NAN;
    } else {
      row.change_pct = (row.target - row.baseline) / std::fabs(row.baseline) * 100;
    }
    if (!f.gated) {
      row.verdict = "info";
    } else if (std::isnan(row.change_pct)) {
      row.verdict = "n/a";
    } else {
      const double worse = f.higher_is_better ? -row.change_pct : row.change_pct;
      if (worse > row.threshold_pct) {
        row.verdict = "REGRESSED";
        c.regressed = true;
      } else {
        row.verdict = worse < -row.threshold_pct ? "better" : "ok";
      }
    }
    c.rows.push_back(row);
  }
  return c;
}

std::string FormatComparison(const Comparison& c) {
  std::string out;
  const bool medians = c.baseline_runs > 1 || c.target_runs > 1;
  out += medians ? fmt::format("comparing medians: baseline {} run(s), target {} run(s)\n",
                               c.baseline_runs, c.target_runs)
                 : "comparing single runs (use bench --repeat N for medians)\n";
  out += fmt::format("{:<16} {:>14} {:>14} {:>9} {:>10} {:>15}  {}\n", "figure", "baseline",
                     "target", "change", "threshold", "spread b/t", "verdict");
  auto spread = [](double s) { return s < 0 ? std::string("-") : fmt::format("{:.1f}%", s); };
  for (const auto& r : c.rows) {
    std::string change = std::isnan(r.change_pct) ? "n/a" : fmt::format("{:+.1f}%", r.change_pct);
    std::string threshold =
        r.gated ? fmt::format("{}{:g}%", r.higher_is_better ? "-" : "+", r.threshold_pct) : "-";
    out +=
        fmt::format("{:<16} {:>14.6g} {:>14.6g} {:>9} {:>10} {:>15}  {}\n", r.figure, r.baseline,
                    r.target, change, threshold,
                    spread(r.baseline_spread_pct) + "/" + spread(r.target_spread_pct), r.verdict);
  }
  out += c.regressed ? "result: REGRESSION\n" : "result: no regression\n";
  return out;
}

}  // namespace seedance::bench
