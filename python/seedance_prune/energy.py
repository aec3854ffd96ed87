"""Energy per inference from NVML's total-energy counter (millijoules since the driver loaded;
Volta and newer), read through libnvidia-ml with ctypes: no Python NVML package needed."""
import ctypes
import time

import torch


class _NVML:
    def __init__(self, index):
        self.lib = ctypes.CDLL("libnvidia-ml.so.1")
        if self.lib.nvmlInit_v2() != 0:
            raise OSError("nvmlInit failed")
        self.handle = ctypes.c_void_p()
        if self.lib.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(self.handle)) != 0:
            raise OSError(f"no NVML device {index}")

    def millijoules(self):
        value = ctypes.c_ulonglong()
        rc = self.lib.nvmlDeviceGetTotalEnergyConsumption(self.handle, ctypes.byref(value))
        if rc != 0:
            raise OSError(f"nvmlDeviceGetTotalEnergyConsumption returned {rc}")
        return value.value


def energy_meter(device_index=0):
    """A function (model, example) -> mJ per inference, measured over at least one second of
    back-to-back forward passes; None where NVML or its energy counter is missing."""
    try:
        nvml = _NVML(device_index)
        nvml.millijoules()
    except OSError:
        return None

    @torch.no_grad()
    def measure(model, example, seconds=1.0):
        model(example)
        torch.cuda.synchronize()
        start, count, t0 = nvml.millijoules(), 0, time.monotonic()
        while time.monotonic() - t0 < seconds:
            for _ in range(20):
                model(example)
            count += 20
            torch.cuda.synchronize()
        return round((nvml.millijoules() - start) / count, 4)

    return measure
