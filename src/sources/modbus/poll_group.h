// PollGroup: one poll group's reads and what its polls report. The reads are planned once (the
// fewest the limits allow); each poll's answers are decoded into the event's payload:
//
//   {"unit":1,"group":"energy","seq":17,"time_ns":1733350000000000000,
//    "values":{"voltage_l1":230.4,"energy_total":123456,"serial":"EM340"}}
//
// With report: changes only the tags whose value changed since the last event are in `values`,
// and a poll where none changed makes no event, except that every tag is sent again once per
// heartbeat. Not thread-safe (the event loop's).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "modbus/tags.h"
#include "sources/modbus/modbus_settings.h"

namespace seedance::sources::modbus_source {

class PollGroup {
 public:
  PollGroup(const GroupSettings& group, const modbus::PlanLimits& limits);

  const std::string& name() const { return name_; }
  uint8_t unit() const { return unit_; }
  const std::vector<modbus::PlannedRead>& reads() const { return reads_; }
  size_t tag_count() const { return tags_.size(); }

  // The answer's data (ReadAnswer::data) to read `i` of this poll.
  void SetAnswer(size_t i, std::string data) { answers_[i] = std::move(data); }
  // The payload of the poll whose answers were all set, or nullopt when it reports nothing
  // (report: changes, nothing changed, no heartbeat due). `now`: the poll's steady time.
  std::optional<std::string> Payload(uint64_t seq, int64_t time_ns,
                                     std::chrono::steady_clock::time_point now);
  // The last Payload() was taken by the pipeline: its values are what was reported.
  void Reported();

 private:
  std::string name_;
  uint8_t unit_;
  Report report_;
  std::chrono::nanoseconds heartbeat_;
  std::vector<modbus::Tag> tags_;
  std::vector<modbus::PlannedRead> reads_;
  std::vector<std::string> answers_;
  std::vector<std::optional<modbus::TagValue>> current_;   // decoded by the last Payload()
  std::vector<std::optional<modbus::TagValue>> reported_;  // what the pipeline has
  bool full_ = false;                                      // the last Payload() had every tag
  std::optional<std::chrono::steady_clock::time_point> last_full_, pending_full_;
};

}  // namespace seedance::sources::modbus_source
