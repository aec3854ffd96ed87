#include "bench/svg_plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace seedance::bench {
namespace {

constexpr double kWidth = 760, kPanelHeight = 220, kLeft = 70, kRight = 20, kTop = 40, kGap = 60;

std::string Escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
}

// A "nice" axis maximum: 1, 2 or 5 × 10^k at or above `v`.
double NiceMax(double v) {
  if (v <= 0) return 1;
  double p = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0}) {
    if (m * p >= v) return m * p;
  }
  return 10 * p;
}

std::string Panel(double top, const std::string& y_label, const std::vector<double>& t,
                  const std::vector<SvgSeries>& series, double t_max) {
  double y_max = 0;
  for (const auto& s : series) {
    for (double v : s.values) {
      if (!std::isnan(v)) y_max = std::max(y_max, v);
    }
  }
  y_max = NiceMax(y_max);
  const double w = kWidth - kLeft - kRight, h = kPanelHeight;
  auto x = [&](double v) { return kLeft + v / t_max * w; };
  auto y = [&](double v) { return top + h - v / y_max * h; };
  std::string out = fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#888\"/>\n", kLeft,
      top, w, h);
  for (int i = 0; i <= 4; ++i) {
    const double v = y_max * i / 4;
    out += fmt::format(
        "<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#eee\"/>"
        "<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\" font-size=\"11\">{:g}</text>\n",
        kLeft, y(v), kLeft + w, y(v), kLeft - 6, y(v) + 4, v);
  }
  for (int i = 0; i <= 5; ++i) {
    const double v = t_max * i / 5;
    out += fmt::format(
        "<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\" font-size=\"11\">{:.3g}</text>\n", x(v),
        top + h + 15, v);
  }
  out += fmt::format(
      "<text x=\"{}\" y=\"{}\" font-size=\"12\" transform=\"rotate(-90 {} {})\" "
      "text-anchor=\"middle\">{}</text>\n",
      18, top + h / 2, 18, top + h / 2, Escape(y_label));
  double legend_x = kLeft + 10;
  for (const auto& s : series) {
    std::string points;
    for (size_t i = 0; i < t.size() && i < s.values.size(); ++i) {
      if (std::isnan(s.values[i])) continue;  // an interval without deliveries
      points += fmt::format("{:.1f},{:.1f} ", x(t[i]), y(s.values[i]));
    }
    out += fmt::format(
        "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"/>\n"
        "<text x=\"{}\" y=\"{}\" font-size=\"11\" fill=\"{}\">{}</text>\n",
        s.color, points, legend_x, top + 14, s.color, Escape(s.name));
    legend_x += 90;
  }
  return out;
}

}  // namespace

std::string LineChartSvg(const std::string& title, const std::string& x_label,
                         const std::vector<double>& x, const std::vector<SvgPanel>& panels) {
  const double x_max = NiceMax(x.empty() ? 1 : x.back());
  const double height =
      kTop + static_cast<double>(panels.size()) * (kPanelHeight + kGap) - kGap + 40;
  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{}\" y=\"22\" font-size=\"14\">{}</text>\n",
      kWidth, height, kLeft, Escape(title));
  double top = kTop;
  for (const auto& panel : panels) {
    out += Panel(top, panel.y_label, x, panel.series, x_max);
    top += kPanelHeight + kGap;
  }
  out += fmt::format(
      "<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\">{}</text>\n</svg>\n",
      kLeft + (kWidth - kLeft - kRight) / 2, height - 8, Escape(x_label));
  return out;
}

std::string TimelineSvg(const std::vector<TimelinePoint>& timeline, const std::string& title) {
  std::vector<double> t;
  SvgSeries p50{"P50 ms", "#1f77b4", {}}, p99{"P99 ms", "#d62728", {}},
      rss{"RSS MB", "#2ca02c", {}};
  for (const auto& p : timeline) {
    t.push_back(p.t_s);
    uint64_t delivered = 0;
    for (uint64_t c : p.latency_buckets) delivered += c;
    p50.values.push_back(delivered > 0 ? p.p50_ms : NAN);
    p99.values.push_back(delivered > 0 ? p.p99_ms : NAN);
    rss.values.push_back(static_cast<double>(p.rss_kb) / 1024.0);
  }
  return LineChartSvg(title, "time since load start (s)", t,
                      {{"latency (ms)", {p50, p99}}, {"RSS (MB)", {rss}}});
}

}  // namespace seedance::bench
