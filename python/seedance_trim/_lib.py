"""ctypes bindings of libseedance_trim.so (the C API in include/seedance/trim_c.h)."""
import ctypes
import os

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(os.path.dirname(_HERE))


def _candidates():
    env = os.environ.get("SEEDANCE_TRIM_LIB")
    if env:
        yield env
    yield os.path.join(_HERE, "libseedance_trim.so")
    for build in ("build", "build-release", "build-gpu", "build-trim"):
        yield os.path.join(_ROOT, build, "src", "trim", "libseedance_trim.so")
        yield os.path.join(_ROOT, build, "libseedance_trim.so")
    yield "libseedance_trim.so.1"


def _load():
    tried = []
    for path in _candidates():
        if os.path.sep in path and not os.path.exists(path):
            tried.append(path)
            continue
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            tried.append(f"{path} ({e})")
    raise OSError("libseedance_trim.so not found; build it (scripts/build) or set "
                  "SEEDANCE_TRIM_LIB. Tried: " + "; ".join(tried))


class Policy(ctypes.Structure):
    _fields_ = [("occupancy_trigger", ctypes.c_double), ("occupancy_samples", ctypes.c_int),
                ("idle_share_trigger", ctypes.c_double), ("idle_steps", ctypes.c_uint64),
                ("fragmentation_trigger", ctypes.c_double),
                ("min_victim_bytes", ctypes.c_uint64), ("low_watermark", ctypes.c_double),
                ("async_copies", ctypes.c_int)]


class Stats(ctypes.Structure):
    _fields_ = [("step", ctypes.c_uint64), ("buffers", ctypes.c_uint64),
                ("registered_bytes", ctypes.c_uint64), ("fast_used", ctypes.c_uint64),
                ("fast_capacity", ctypes.c_uint64), ("fast_fragmentation", ctypes.c_double),
                ("idle_share", ctypes.c_double), ("trims", ctypes.c_uint64),
                ("bytes_moved_down", ctypes.c_uint64), ("bytes_moved_up", ctypes.c_uint64),
                ("stalls", ctypes.c_uint64), ("trim_latency_p50_us", ctypes.c_double),
                ("trim_latency_p99_us", ctypes.c_double),
                ("bytes_down_without_copy", ctypes.c_uint64),
                ("retained_bytes", ctypes.c_uint64), ("fast_peak_used", ctypes.c_uint64),
                ("prefetches", ctypes.c_uint64), ("copy_seconds", ctypes.c_double),
                ("bytes_moved_encoded", ctypes.c_uint64), ("bytes_codec_saved", ctypes.c_uint64),
                ("codec_seconds", ctypes.c_double), ("codec_declined", ctypes.c_uint64)]

    def as_dict(self):
        return {name: getattr(self, name) for name, _ in self._fields_}


class CudaOptions(ctypes.Structure):
    _fields_ = [("device", ctypes.c_int), ("device_budget", ctypes.c_uint64),
                ("pinned_capacity", ctypes.c_uint64), ("small_arena", ctypes.c_uint64),
                ("peer_devices", ctypes.POINTER(ctypes.c_int)),
                ("peer_device_count", ctypes.c_int), ("posix_fd_handles", ctypes.c_int),
                ("capture_safe", ctypes.c_int)]


class StreamPlanInfo(ctypes.Structure):
    _fields_ = [("resident_bytes", ctypes.c_uint64), ("ring_bytes", ctypes.c_uint64),
                ("streamed_bytes", ctypes.c_uint64), ("compute_seconds", ctypes.c_double),
                ("bound_seconds", ctypes.c_double), ("simulated_step_seconds", ctypes.c_double),
                ("lookahead", ctypes.c_int)]

    def as_dict(self):
        return {name: getattr(self, name) for name, _ in self._fields_}


class StreamStats(ctypes.Structure):
    _fields_ = [("copies", ctypes.c_uint64), ("bytes_copied", ctypes.c_uint64),
                ("issued_at_begin", ctypes.c_uint64), ("host_waits", ctypes.c_uint64),
                ("order_misses", ctypes.c_uint64), ("most_ahead", ctypes.c_int)]

    def as_dict(self):
        return {name: getattr(self, name) for name, _ in self._fields_}


lib = _load()
_u64 = ctypes.c_uint64
_mgr = ctypes.c_void_p
for name, res, args in [
    ("sd_trim_policy_defaults", None, [ctypes.POINTER(Policy)]),
    ("sd_trim_create_host_keeping", ctypes.c_int,
     [_u64, _u64, ctypes.POINTER(Policy), ctypes.POINTER(_mgr)]),
    ("sd_trim_create_cuda", ctypes.c_int,
     [ctypes.POINTER(CudaOptions), ctypes.POINTER(Policy), ctypes.POINTER(_mgr)]),
    ("sd_trim_destroy", None, [_mgr]),
    ("sd_trim_register", ctypes.c_int,
     [_mgr, _u64, ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(_u64)]),
    ("sd_trim_register_ex", ctypes.c_int,
     [_mgr, _u64, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint, ctypes.POINTER(_u64)]),
    ("sd_trim_unregister", ctypes.c_int, [_mgr, _u64]),
    ("sd_trim_acquire", ctypes.c_int, [_mgr, _u64, ctypes.POINTER(ctypes.c_void_p)]),
    ("sd_trim_acquire_read", ctypes.c_int, [_mgr, _u64, ctypes.POINTER(ctypes.c_void_p)]),
    ("sd_trim_release", ctypes.c_int, [_mgr, _u64]),
    ("sd_trim_acquire_many", ctypes.c_int,
     [_mgr, ctypes.POINTER(_u64), ctypes.c_size_t, ctypes.c_int,
      ctypes.POINTER(ctypes.c_void_p)]),
    ("sd_trim_release_many", ctypes.c_int, [_mgr, ctypes.POINTER(_u64), ctypes.c_size_t]),
    ("sd_trim_step", None, [_mgr]),
    ("sd_trim_prefetch", ctypes.c_int, [_mgr, _u64]),
    ("sd_trim_prefetch_many", ctypes.c_int, [_mgr, ctypes.POINTER(_u64), ctypes.c_size_t]),
    ("sd_trim_trim", ctypes.c_size_t, [_mgr]),
    ("sd_trim_tier_of", ctypes.c_int, [_mgr, _u64, ctypes.POINTER(ctypes.c_int)]),
    ("sd_trim_lookup", ctypes.c_int, [_mgr, ctypes.c_void_p, ctypes.POINTER(_u64)]),
    ("sd_trim_get_stats", None, [_mgr, ctypes.POINTER(Stats)]),
    ("sd_trim_last_error", ctypes.c_char_p, [_mgr]),
    ("sd_trim_stream_plan", ctypes.c_int,
     [ctypes.c_size_t, ctypes.POINTER(_u64), ctypes.POINTER(ctypes.c_double), _u64,
      ctypes.c_double, ctypes.POINTER(ctypes.c_uint8), ctypes.POINTER(StreamPlanInfo)]),
    ("sd_trim_stream_create_host", ctypes.c_int,
     [ctypes.c_size_t, ctypes.POINTER(_u64), ctypes.POINTER(ctypes.c_double),
      ctypes.POINTER(ctypes.c_void_p), _u64, ctypes.c_double, ctypes.POINTER(ctypes.c_void_p)]),
    ("sd_trim_stream_begin", ctypes.c_int,
     [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p)]),
    ("sd_trim_stream_end", ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t]),
    ("sd_trim_stream_get_info", None, [ctypes.c_void_p, ctypes.POINTER(StreamPlanInfo)]),
    ("sd_trim_stream_get_stats", None, [ctypes.c_void_p, ctypes.POINTER(StreamStats)]),
    ("sd_trim_stream_destroy", None, [ctypes.c_void_p]),
]:
    fn = getattr(lib, name)
    fn.restype = res
    fn.argtypes = args
