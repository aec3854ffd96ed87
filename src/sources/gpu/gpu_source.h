// The `gpu` source: one event per GPU per interval with its memory (device and per process),
// utilisation, power and energy, temperature, clocks, PCIe throughput and, on Hopper and later,
// GPM metrics; read through NVML (loaded at run time: the binary starts without a driver) or,
// on Jetson modules, sysfs. Reading runs on a thread of its own (sampler.h); events go through
// the queue, processors and sinks like any other. docs/gpu-source.md.
#pragma once

#include "seedance/plugin_registry.h"

namespace seedance::sources {

SourceFactory GpuSourceFactory();

}  // namespace seedance::sources
