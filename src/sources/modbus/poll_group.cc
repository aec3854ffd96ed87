#include "sources/modbus/poll_group.h"

#include <fmt/format.h>

namespace seedance::sources::modbus_source {

PollGroup::PollGroup(const GroupSettings& group, const modbus::PlanLimits& limits)
    : name_(group.name),
      unit_(static_cast<uint8_t>(group.unit)),
      report_(group.report),
      heartbeat_(group.heartbeat),
      tags_(group.codec_tags),
      reads_(modbus::PlanReads(tags_, limits)),
      answers_(reads_.size()),
      current_(tags_.size()),
      reported_(tags_.size()) {}

std::optional<std::string> PollGroup::Payload(uint64_t seq, int64_t time_ns,
                                              std::chrono::steady_clock::time_point now) {
  for (size_t r = 0; r < reads_.size(); ++r) {
    for (size_t t : reads_[r].tags)
      current_[t] = modbus::DecodeTag(tags_[t], reads_[r], answers_[r]);
  }
  full_ = report_ == Report::kAll || !last_full_ || now - *last_full_ >= heartbeat_;
  std::string out = fmt::format(R"({{"unit":{},"group":)", unit_);
  modbus::AppendTagValueJson(modbus::TagValue(name_), out);
  fmt::format_to(std::back_inserter(out), R"(,"seq":{},"time_ns":{},"values":{{)", seq, time_ns);
  bool any = false;
  for (size_t t = 0; t < tags_.size(); ++t) {
    if (!full_ && current_[t] == reported_[t]) continue;
    if (any) out += ',';
    any = true;
    modbus::AppendTagValueJson(modbus::TagValue(tags_[t].name), out);
    out += ':';
    modbus::AppendTagValueJson(*current_[t], out);
  }
  if (!any) return std::nullopt;
  out += "}}";
  pending_full_ = full_ ? std::optional(now) : std::nullopt;
  return out;
}

void PollGroup::Reported() {
  reported_ = current_;
  if (pending_full_) last_full_ = pending_full_;
}

}  // namespace seedance::sources::modbus_source
