// A seed for the retry jitter's generators (not for anything secret): 32 bits from
// getrandom(2). Not std::random_device: libstdc++'s asks the CPU which instructions it has
// (cpuid) each time one is constructed, and in a virtual machine every cpuid is a trap to the
// hypervisor (about 7 us on the development VM), at every start for every client and sink.
#pragma once

#include <cstdint>

namespace seedance::util {

uint32_t RandomSeed();

}  // namespace seedance::util
