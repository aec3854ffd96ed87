#include "sinks/kafka/kafka_library.h"

#include <dlfcn.h>

#include <mutex>

namespace seedance::sinks {

const KafkaLibrary* LoadKafkaLibrary(std::string* why) {
  static std::once_flag once;
  static KafkaLibrary lib;
  static const KafkaLibrary* loaded = nullptr;
  static std::string error;
  std::call_once(once, [] {
    void* handle = nullptr;
    for (const char* name : {"librdkafka.so.1", "librdkafka.so"}) {
      handle = ::dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (handle != nullptr) break;
    }
    if (handle == nullptr) {
      error = std::string("librdkafka is not installed (Debian: apt install librdkafka1): ") +
              ::dlerror();
      return;
    }
#define SEEDANCE_KAFKA_RESOLVE(name)                                                   \
  lib.name = reinterpret_cast<decltype(&::name)>(::dlsym(handle, #name));              \
  if (lib.name == nullptr) {                                                           \
    error = "the installed librdkafka has no " #name " (version 1.4 or later needed)"; \
    return;                                                                            \
  }
    SEEDANCE_KAFKA_FUNCTIONS(SEEDANCE_KAFKA_RESOLVE)
#undef SEEDANCE_KAFKA_RESOLVE
    loaded = &lib;
  });
  if (loaded == nullptr && why != nullptr) *why = error;
  return loaded;
}

}  // namespace seedance::sinks
