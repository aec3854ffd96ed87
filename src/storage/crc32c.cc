#include "storage/crc32c.h"

#include <boost/crc.hpp>

namespace seedance::storage {

using Crc32cImpl = boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true>;

uint32_t Crc32c(std::string_view data) {
  Crc32cImpl crc;
  crc.process_bytes(data.data(), data.size());
  return crc.checksum();
}

uint32_t Crc32c(std::string_view a, std::string_view b) {
  Crc32cImpl crc;
  crc.process_bytes(a.data(), a.size());
  crc.process_bytes(b.data(), b.size());
  return crc.checksum();
}

}  // namespace seedance::storage
