// Durable queue throughput: append (with a commit per batch of 256, as the pipeline does) and
// replay (a sink cursor reading and decoding), for 200 B and 2 KB events under each fsync
// policy. Prints one JSON object.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "storage/durable_queue.h"

namespace {

using Clock = std::chrono::steady_clock;
using seedance::Event;
using seedance::Output;
using seedance::storage::DurableQueue;
using seedance::storage::QueueConfig;

struct Run {
  std::string fsync;
  size_t event_bytes;
  size_t events;
  double append_eps, append_mbps, replay_eps, replay_mbps;
};

Run Measure(const std::string& dir, QueueConfig::Fsync fsync, const std::string& name,
            size_t event_bytes, size_t events) {
  std::filesystem::remove_all(dir);
  seedance::observe::MetricsRegistry metrics;
  QueueConfig config;
  config.data_dir = dir;
  config.max_disk = 8ull << 30;
  config.fsync.mode = fsync;
  auto queue = DurableQueue::Open(config, metrics).value();
  auto cursor = queue->OpenCursor("bench", {Output::kMain});
  Event e;
  e.source = "mqtt";
  e.topic = "sensor/1/temperature";
  e.payload = std::string(event_bytes, 'x');
  auto t0 = Clock::now();
  for (size_t i = 0; i < events; ++i) {
    e.id = i;
    if (!queue->Append(Output::kMain, e).ok()) std::abort();
    if (i % 256 == 255) {
      if (!queue->Commit().ok()) std::abort();
      queue->Tick();
    }
  }
  if (!queue->Commit().ok()) std::abort();
  double append_s = std::chrono::duration<double>(Clock::now() - t0).count();
  auto t1 = Clock::now();
  size_t read = 0;
  std::vector<Event> batch;
  uint64_t first = 0, last = 0;
  while (true) {
    batch.clear();
    if (!cursor->Read(500, &batch, &first, &last)) break;
    read += batch.size();
    cursor->Done(first, last);
  }
  double replay_s = std::chrono::duration<double>(Clock::now() - t1).count();
  if (read != events) std::abort();
  double mb = static_cast<double>(events * event_bytes) / 1e6;
  return Run{name,          event_bytes,       events,       events / append_s,
             mb / append_s, events / replay_s, mb / replay_s};
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = argc > 1 ? argv[1] : "/tmp/seedance-queue-bench";
  std::vector<Run> runs;
  for (size_t bytes : {200, 2048}) {
    runs.push_back(
        Measure(dir, QueueConfig::Fsync::kNever, "never", bytes, bytes == 200 ? 500000 : 200000));
    runs.push_back(Measure(dir, QueueConfig::Fsync::kInterval, "100ms", bytes,
                           bytes == 200 ? 500000 : 200000));
    runs.push_back(
        Measure(dir, QueueConfig::Fsync::kAlways, "always", bytes, bytes == 200 ? 100000 : 50000));
  }
  std::filesystem::remove_all(dir);
  std::string out = "{\"benchmark\": \"queue\", \"commit_batch\": 256, \"runs\": [";
  for (size_t i = 0; i < runs.size(); ++i) {
    const Run& r = runs[i];
    out += fmt::format(
        "{}{{\"fsync\": \"{}\", \"event_bytes\": {}, \"events\": {}, \"append_events_per_s\": "
        "{:.0f}, "
        "\"append_mb_per_s\": {:.1f}, \"replay_events_per_s\": {:.0f}, \"replay_mb_per_s\": "
        "{:.1f}}}",
        i ? ", " : "", r.fsync, r.event_bytes, r.events, r.append_eps, r.append_mbps, r.replay_eps,
        r.replay_mbps);
  }
  out += "]}";
  std::puts(out.c_str());
}
