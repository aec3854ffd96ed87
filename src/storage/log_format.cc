#include "storage/log_format.h"

#include <cstdio>
#include <cstdlib>

namespace seedance::storage {

std::string SegmentFileName(uint64_t first_sequence) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%020llu.log", static_cast<unsigned long long>(first_sequence));
  return buf;
}

bool ParseSegmentFileName(const std::string& name, uint64_t* first_sequence) {
  if (name.size() != 24 || name.compare(20, 4, ".log") != 0) return false;
  for (size_t i = 0; i < 20; ++i) {
    if (name[i] < '0' || name[i] > '9') return false;
  }
  *first_sequence = std::strtoull(name.substr(0, 20).c_str(), nullptr, 10);
  return true;
}

}  // namespace seedance::storage
