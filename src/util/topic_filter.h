// MQTT topic names and filters: validation and matching (MQTT 3.1.1 §4.7, 5.0 §4.7).
#pragma once

#include <string_view>

#include "seedance/status.h"

namespace seedance::util {

// OK when `filter` is a valid subscription filter: '+' fills a whole level, '#' is a whole
// last level; "$share/group/filter" is accepted. kInvalidArgument says what is wrong.
Status ValidateTopicFilter(std::string_view filter);

// True when topic name `topic` matches `filter` (no "$share/" prefix). Topics starting
// with '$' are not matched by a leading wildcard.
bool TopicMatches(std::string_view filter, std::string_view topic);

}  // namespace seedance::util
