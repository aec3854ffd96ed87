// Line charts as self-contained SVG: stacked panels sharing one x axis. TimelineSvg draws a
// bench run (latency P50/P99 and RSS over time). Hand-written: a few dozen lines of markup;
// no plotting library in Debian writes SVG without pulling in far more than this needs.
#pragma once

#include <string>
#include <vector>

#include "bench/report.h"

namespace seedance::bench {

struct SvgSeries {
  std::string name;
  std::string color;
  std::vector<double> values;  // one per x; NaN = no point
};
struct SvgPanel {
  std::string y_label;
  std::vector<SvgSeries> series;
};

std::string LineChartSvg(const std::string& title, const std::string& x_label,
                         const std::vector<double>& x, const std::vector<SvgPanel>& panels);

std::string TimelineSvg(const std::vector<TimelinePoint>& timeline, const std::string& title);

}  // namespace seedance::bench
