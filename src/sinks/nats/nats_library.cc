#include "sinks/nats/nats_library.h"

#include <dlfcn.h>

#include <mutex>

namespace seedance::sinks {

const NatsLibrary* LoadNatsLibrary(std::string* why) {
  static std::once_flag once;
  static NatsLibrary lib;
  static const NatsLibrary* loaded = nullptr;
  static std::string error;
  std::call_once(once, [] {
    // The soname of Debian 12's package first, then whatever libnats.so the system has.
    void* handle = nullptr;
    for (const char* name : {"libnats.so.3.4", "libnats.so"}) {
      handle = ::dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (handle != nullptr) break;
    }
    if (handle == nullptr) {
      error = std::string("the NATS C client is not installed (Debian: apt install libnats3.4): ") +
              ::dlerror();
      return;
    }
#define SEEDANCE_NATS_RESOLVE(name)                                                       \
  lib.name = reinterpret_cast<decltype(&::name)>(::dlsym(handle, #name));                 \
  if (lib.name == nullptr) {                                                              \
    error = "the installed NATS C client has no " #name " (version 3.4 or later needed)"; \
    return;                                                                               \
  }
    SEEDANCE_NATS_FUNCTIONS(SEEDANCE_NATS_RESOLVE)
#undef SEEDANCE_NATS_RESOLVE
    loaded = &lib;
  });
  if (loaded == nullptr && why != nullptr) *why = error;
  return loaded;
}

}  // namespace seedance::sinks
