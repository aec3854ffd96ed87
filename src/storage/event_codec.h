// Binary encoding of an Event as a durable-queue record payload. See
// docs/formats/queue-log.md ("Event payload").
#pragma once

#include <string>
#include <string_view>

#include "seedance/event.h"
#include "seedance/status.h"

namespace seedance::storage {

void EncodeEvent(const Event& event, std::string& out);
// kDataLoss when `bytes` is not a complete encoding.
Status DecodeEvent(std::string_view bytes, Event* event);

}  // namespace seedance::storage
