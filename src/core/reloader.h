// Reloader: SIGHUP's new configuration, taken by the processors between two batches.
//
// Reload() compares the running configuration with the new one. Changed parameters of
// processors are handed to the processing thread, which checks all of them and then applies
// all of them between two batches (Processor::Reconfigure), keeping the processors' state; a
// refusal applies none. A changed processor list (added, removed, renamed, retyped) needs a
// restart: kFailedPrecondition, nothing changes. Sections that are not reloaded (sources,
// sinks) are listed in `ignored` when they differ. Reload() waits up to 10 s for the
// processing thread (kDeadlineExceeded then).
#pragma once

#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"
#include "seedance/processor.h"

namespace seedance {

class Reloader {
 public:
  struct Target {
    std::string name;
    Processor* processor;
  };
  explicit Reloader(std::vector<Target> processors) : processors_(std::move(processors)) {}

  // Any thread but the processing thread.
  Status Reload(const config::PipelineConfig& now, const config::PipelineConfig& next,
                std::vector<std::string>* ignored);
  // Processing thread, between two batches: applies the reload waiting, if any.
  void ApplyPending();

 private:
  struct Pending {
    std::vector<std::pair<size_t, Params>> changes;  // processor index → new parameters
    std::promise<Status> done;
  };
  std::vector<Target> processors_;
  std::mutex mu_;
  std::unique_ptr<Pending> pending_;
};

}  // namespace seedance
