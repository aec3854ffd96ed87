#include "core/reloader.h"

#include <fmt/format.h>

#include "util/log.h"

namespace seedance {

Status Reloader::Reload(const config::PipelineConfig& now, const config::PipelineConfig& next,
                        std::vector<std::string>* ignored) {
  if (next.processors.size() != now.processors.size()) {
    return Status(StatusCode::kFailedPrecondition,
                  "processors were added or removed; that needs a restart");
  }
  auto pending = std::make_unique<Pending>();
  for (size_t i = 0; i < now.processors.size(); ++i) {
    const auto& was = now.processors[i];
    const auto& is = next.processors[i];
    if (was.name != is.name || was.type != is.type) {
      return Status(StatusCode::kFailedPrecondition,
                    fmt::format("processor {} is now \"{}\" ({}), was \"{}\" ({}); changing the "
                                "processor list needs a restart",
                                i + 1, is.name, is.type, was.name, was.type));
    }
    if (!was.params.SameValues(is.params)) pending->changes.emplace_back(i, is.params);
  }
  auto differs = [](const std::vector<config::ComponentConfig>& a,
                    const std::vector<config::ComponentConfig>& b) {
    if (a.size() != b.size()) return true;
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i].name != b[i].name || a[i].type != b[i].type || a[i].inputs != b[i].inputs ||
          a[i].named_inputs != b[i].named_inputs || a[i].topics != b[i].topics ||
          !a[i].params.SameValues(b[i].params)) {
        return true;
      }
    }
    return false;
  };
  if (differs(now.sources, next.sources)) ignored->push_back("sources");
  if (differs(now.sinks, next.sinks)) ignored->push_back("sinks");
  if (pending->changes.empty()) return Status::Ok();
  std::future<Status> done = pending->done.get_future();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (pending_) return Status(StatusCode::kFailedPrecondition, "a reload is in progress");
    pending_ = std::move(pending);
  }
  if (done.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    return Status(StatusCode::kDeadlineExceeded, "the processing thread did not take the reload");
  }
  return done.get();
}

void Reloader::ApplyPending() {
  std::unique_ptr<Pending> pending;
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending = std::move(pending_);
  }
  if (!pending) return;
  for (const bool apply : {false, true}) {  // check all, then apply all
    for (const auto& [index, params] : pending->changes) {
      const Target& t = processors_[index];
      Status s = t.processor->Reconfigure(params, apply);
      if (!s.ok()) {
        pending->done.set_value(s.WithContext("processor \"" + t.name + "\""));
        return;
      }
      if (apply) SEEDANCE_LOG_INFO(t.name, "new parameters applied");
    }
  }
  pending->done.set_value(Status::Ok());
}

}  // namespace seedance
