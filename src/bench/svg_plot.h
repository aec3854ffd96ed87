// TimelineSvg: a bench run's timeline as a self-contained SVG (latency P50/P99 and RSS over
// time, two panels). Hand-written: a few dozen lines of markup; no plotting library in
// Debian writes SVG without pulling in far more than this needs.
#pragma once

#include <string>
#include <vector>

#include "bench/report.h"

namespace seedance::bench {

std::string TimelineSvg(const std::vector<TimelinePoint>& timeline, const std::string& title);

}  // namespace seedance::bench
