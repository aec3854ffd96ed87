// The `prometheus_scrape` source: scrapes Prometheus /metrics pages (node-exporter, PLC
// exporters, any application) every `interval`, and makes each sample an event.
//
// - Each target is asked with an Accept header that prefers OpenMetrics text and takes the
//   text format 0.0.4 (as Prometheus asks); the answer's Content-Type decides the parser
//   (observe/prometheus_text.h, the tree's one, bounded and fuzzed).
// - Each sample is one event on `topic`: {"name","labels":{...},"value","timestamp_ms"
//   (when the page gave one),"instance","job"}; a value that JSON cannot hold (NaN, ±Inf) is
//   the string "NaN", "+Inf" or "-Inf". Its event time is the sample's timestamp, or the
//   scrape's start.
// - Each scrape also gives an `up` event, as Prometheus records: {"name":"up","value":1 or 0,
//   "instance","job","scrape_duration_seconds","scrape_samples", and "error" when it failed}.
//   A scrape fails on a refused connection, no answer within `timeout`, a status other than
//   200, a body over `max_body`, a page the parser refuses (the line and why), or more than
//   `max_samples` samples; it is counted as an error of the source and logged once per
//   episode per target.
// - Scrapes are timed from the start, every `interval` (a missed one is skipped, not run
//   late). While the pipeline is full the samples of a scrape wait in the source; a target
//   whose previous scrape is still waiting is skipped (counted,
//   seedance_events_dropped_total{reason="scrape_skipped"}). Scraped samples cannot be asked
//   for again: nothing is acknowledged.
#pragma once

#include "seedance/plugin_registry.h"

namespace seedance::sources {

SourceFactory PrometheusScrapeSourceFactory();

}  // namespace seedance::sources
