// `seedance bench compare`: a baseline report against a target report, figure by figure.
//
// Each figure has a direction (lower or higher is better) and a threshold (percent). A
// figure regresses when the target is worse than the baseline by more than its threshold.
// Reports with several repetitions are compared on their medians (and the table says so,
// with each side's spread: (max − min) / median over its runs).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "seedance/result.h"

namespace seedance::bench {

struct CompareOptions {
  double threshold_pct = 5;
  std::map<std::string, double> metric_threshold_pct;  // figure name → percent
};

struct CompareRow {
  std::string figure;
  bool gated = true;  // false: shown for information only
  bool higher_is_better = false;
  double baseline = 0;
  double target = 0;
  double change_pct = 0;  // (target − baseline) / baseline × 100; NaN when baseline is 0
  double threshold_pct = 0;
  double baseline_spread_pct = -1;  // -1 when the report has one run
  double target_spread_pct = -1;
  std::string verdict;  // "ok", "better", "REGRESSED", "info", "n/a"
};

struct Comparison {
  std::vector<CompareRow> rows;
  int baseline_runs = 1;
  int target_runs = 1;
  bool regressed = false;
};

// The figures, their directions and whether they gate. For --metric-threshold checks.
std::vector<std::string> ComparableFigures();

// Parses "5%", "5" or "0.5%" into percent. kInvalidArgument otherwise.
Result<double> ParsePercent(const std::string& text);

// kInvalidArgument when a report is not a bench report or a threshold names no figure.
Result<Comparison> CompareReports(const std::string& baseline_json, const std::string& target_json,
                                  const CompareOptions& options);

// The table printed by the command.
std::string FormatComparison(const Comparison& comparison);

}  // namespace seedance::bench
