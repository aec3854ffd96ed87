// Names the calling thread (at most 15 bytes; longer names are cut), so `top -H`, `perf` and
// /proc/PID/task/*/comm show what each thread is: sd-io (the event loop), sd-process (the
// processing thread), sd-fsync (the durable queue's interval fsync), sd-lua-reload, sd-shutdown.
#pragma once

#include <pthread.h>
#include <sched.h>

#include <string>

namespace seedance::util {

inline void NameThisThread(const std::string& name) {
  pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
}

// Puts the calling thread under SCHED_BATCH: the same CPU share as SCHED_OTHER at the same
// nice value, but a thread it wakes does not preempt the running one. The event loop and the
// processing thread hand batches to each other; under SCHED_OTHER the woken thread usually
// preempted the waker a few instructions before the waker went to sleep anyway, a second
// context switch per hand-off (docs/bench.md, "Tuning record"). Failure (a sandbox refusing
// the call) only costs those switches, so it is not reported.
inline void ScheduleThisThreadAsBatch() {
  sched_param param{};
  param.sched_priority = 0;
  pthread_setschedparam(pthread_self(), SCHED_BATCH, &param);
}

}  // namespace seedance::util
