#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "http/fetch.h"
#include "main/commands.h"
#include "slo/slo_check.h"
#include "util/units.h"

namespace seedance::cli {
namespace {

Result<std::vector<observe::Sample>> Scrape(const std::string& url) {
  SEEDANCE_ASSIGN_OR_RETURN(http::FetchReply reply, http::Fetch("GET", url));
  if (reply.status != 200) {
    return Status(StatusCode::kUnavailable, fmt::format("GET {}: HTTP {}", url, reply.status));
  }
  auto samples = observe::ParsePrometheusText(reply.body);
  if (!samples) return Status(StatusCode::kInvalidArgument, url + ": " + samples.error().message());
  return samples;
}

}  // namespace

int SloCheck(const SloCheckOptions& o) {
  auto metric = slo::ParseSloMetric(o.metric);
  if (!metric) {
    std::cerr << "--metric: " << metric.error().message() << "\n";
    return kExitConfig;
  }
  auto window = util::ParseDuration(o.window);
  if (!window) {
    std::cerr << "--window: " << window.error().message() << "\n";
    return kExitConfig;
  }
  if (o.url.empty() == o.report_path.empty()) {
    std::cerr << "give exactly one of --url (a running seedance's /metrics) or --report (a "
                 "bench report)\n";
    return kExitConfig;
  }
  const double window_s = std::chrono::duration<double>(*window).count();
  Result<double> value = 0.0;
  std::string how;
  if (!o.url.empty()) {
    std::vector<observe::Sample> before;
    if (window_s > 0) {
      auto first = Scrape(o.url);
      if (!first) {
        std::cerr << first.error().message() << "\n";
        return kExitConfig;
      }
      before = std::move(*first);
      std::this_thread::sleep_for(*window);
    }
    auto after = Scrape(o.url);
    if (!after) {
      std::cerr << after.error().message() << "\n";
      return kExitConfig;
    }
    value = slo::FigureFromScrapes(*metric, before, *after, window_s);
    how = window_s > 0 ? "between two scrapes" : "since the process started";
  } else {
    std::ifstream in(o.report_path);
    if (!in) {
      std::cerr << "cannot read " << o.report_path << "\n";
      return kExitConfig;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    value = slo::FigureFromReport(*metric, ss.str(), window_s, &how);
  }
  if (!value) {
    std::cout << fmt::format("{}: {}: FAIL (no verdict without data)\n", o.metric,
                             value.error().message());
    return value.error().code() == StatusCode::kNotFound ? kExitRuntime : kExitConfig;
  }
  const bool ok = slo::MeetsObjective(*metric, *value, o.slo);
  std::cout << fmt::format("{} over {} ({}): {:.3f} {} objective {} {:g}: {}\n", o.metric,
                           window_s > 0 ? o.window : "all", how, *value,
                           metric->latency ? "ms," : "events/s,",
                           metric->higher_is_better ? ">=" : "<=", o.slo, ok ? "OK" : "FAIL");
  if (!o.push_url.empty()) {
    std::string url = o.push_url;
    while (!url.empty() && url.back() == '/') url.pop_back();
    url += "/metrics/job/" + o.job;
    auto reply = http::Fetch("PUT", url, slo::PushgatewayBody(*metric, *value, o.slo, window_s),
                             "text/plain; version=0.0.4");
    if (!reply || reply->status / 100 != 2) {
      std::cerr << "push to " << url << " failed: "
                << (reply ? fmt::format("HTTP {}: {}", reply->status, reply->body)
                          : reply.error().message())
                << "\n";
      return kExitConfig;
    }
    std::cout << "pushed to " << url << "\n";
  }
  return ok ? kExitOk : kExitRuntime;
}

}  // namespace seedance::cli
