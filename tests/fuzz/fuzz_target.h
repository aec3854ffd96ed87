// Declares a fuzz target. Built with clang and -fsanitize=fuzzer, a target is the binary's
// LLVMFuzzerTestOneInput; in the unit tests (SEEDANCE_FUZZ_NO_MAIN) every target is an
// ordinary function that fuzz_driver_test.cc runs over its seed corpus and seeded mutations
// of it, so each CI run fuzzes every target a little.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace seedance::fuzz {

// A broken property: says which, with the input's first 300 bytes, and aborts (the fuzzer keeps
// the input; the unit test's driver dies with the message).
[[noreturn]] inline void Fail(const char* target, const char* what, std::string_view input) {
  std::fprintf(stderr, "%s fuzz: %s for input: %.*s\n", target, what,
               static_cast<int>(std::min<size_t>(input.size(), 300)), input.data());
  std::abort();
}

}  // namespace seedance::fuzz

#ifdef SEEDANCE_FUZZ_NO_MAIN
#define SEEDANCE_FUZZ_TARGET(name) \
  extern "C" int SeedanceFuzz_##name(const uint8_t* data, size_t size)
#else
#define SEEDANCE_FUZZ_TARGET(name) \
  extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
#endif
