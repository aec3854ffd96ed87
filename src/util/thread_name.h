// Names the calling thread (at most 15 bytes; longer names are cut), so `top -H`, `perf` and
// /proc/PID/task/*/comm show what each thread is: sd-io (the event loop), sd-process (the
// processing thread), sd-lua-reload, sd-shutdown.
#pragma once

#include <pthread.h>

#include <string>

namespace seedance::util {

inline void NameThisThread(const std::string& name) {
  pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
}

}  // namespace seedance::util
