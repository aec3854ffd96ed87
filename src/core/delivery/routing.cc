#include "core/delivery/routing.h"

#include <algorithm>

#include "util/topic_filter.h"

namespace seedance::delivery {

bool Routing::Wants(const Event& event) const {
  if (by_output) {
    const std::string* header = event.FindHeader(kOutputHeader);
    const std::string_view output = header ? std::string_view(*header) : OutputName(Output::kMain);
    if (std::find(outputs.begin(), outputs.end(), output) == outputs.end()) return false;
  }
  if (topics.empty()) return true;
  for (const std::string& f : topics) {
    if (util::TopicMatches(f, event.topic)) return true;
  }
  return false;
}

}  // namespace seedance::delivery
