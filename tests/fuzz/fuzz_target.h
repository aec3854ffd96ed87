// Declares a fuzz target. Built with clang and -fsanitize=fuzzer, a target is the binary's
// LLVMFuzzerTestOneInput; in the unit tests (SEEDANCE_FUZZ_NO_MAIN) every target is an
// ordinary function that fuzz_driver_test.cc runs over its seed corpus and seeded mutations
// of it, so each CI run fuzzes every target a little.
#pragma once

#include <cstddef>
#include <cstdint>

#ifdef SEEDANCE_FUZZ_NO_MAIN
#define SEEDANCE_FUZZ_TARGET(name) \
  extern "C" int SeedanceFuzz_##name(const uint8_t* data, size_t size)
#else
#define SEEDANCE_FUZZ_TARGET(name) \
  extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
#endif
