// CommitUntilDeadline: the durable queue and the checkpoint are committed before a batch is
// acknowledged; a failed commit (an I/O error, a full disk) is retried every 100 ms, logged
// at most every 10 s, until it succeeds or the shutdown deadline passes. Then the batch stays
// unacknowledged (its sources send it again) and the function returns false.
#pragma once

#include <functional>
#include <string_view>

#include "seedance/status.h"
#include "util/log.h"

namespace seedance {

// `what` names what cannot be written ("the durable queue"), `component` the log's.
bool CommitUntilDeadline(const std::function<Status()>& commit,
                         const std::function<bool()>& past_deadline, std::string_view component,
                         std::string_view what, util::LogLimiter& limiter);

}  // namespace seedance
