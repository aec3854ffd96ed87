"""TrimManager: seedance::trim's manager from Python (thread-safe, like the C API)."""
import ctypes

from . import _lib

_ERRORS = {-1: ValueError, -2: KeyError, -3: MemoryError, -4: RuntimeError, -5: RuntimeError,
           -6: RuntimeError}


class TrimError(RuntimeError):
    """A seedance::trim call failed; `code` is the SD_TRIM_E* code."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def _check(rc, manager=None):
    if rc != 0:
        raise TrimError(rc, _lib.lib.sd_trim_last_error(manager).decode(errors="replace"))


def policy(**overrides):
    """The article's defaults with `overrides` (field names of sd_trim_policy)."""
    p = _lib.Policy()
    _lib.lib.sd_trim_policy_defaults(ctypes.byref(p))
    for key, value in overrides.items():
        if not hasattr(p, key):
            raise TypeError(f"no policy option {key!r}")
        setattr(p, key, value)
    return p


class TrimManager:
    """Buffers on a fast tier with a budget and a slower tier; see seedance/trim.h.

    TrimManager.host(fast_bytes, slow_bytes): RAM tiers whose fast blocks keep their address
    across moves (so tensors can wrap them). TrimManager.cuda(device_budget, pinned_bytes):
    GPU memory and pinned host memory.
    """

    def __init__(self, handle, device):
        self._h = handle
        self.device = device  # "cpu" or "cuda:N"

    @classmethod
    def host(cls, fast_bytes, slow_bytes, **policy_overrides):
        h = ctypes.c_void_p()
        _check(_lib.lib.sd_trim_create_host_keeping(fast_bytes, slow_bytes,
                                                     ctypes.byref(policy(**policy_overrides)),
                                                     ctypes.byref(h)))
        return cls(h, "cpu")

    @classmethod
    def cuda(cls, device_budget, pinned_bytes, device=0, small_arena=0, capture_safe=False,
             **policy_overrides):
        """capture_safe: moves wait for the legacy default stream (PyTorch's default stream)
        instead of the whole device, so CUDA graph captures on other threads survive."""
        o = _lib.CudaOptions(device=device, device_budget=device_budget,
                             pinned_capacity=pinned_bytes, small_arena=small_arena,
                             capture_safe=1 if capture_safe else 0)
        h = ctypes.c_void_p()
        _check(_lib.lib.sd_trim_create_cuda(ctypes.byref(o),
                                             ctypes.byref(policy(**policy_overrides)),
                                             ctypes.byref(h)))
        return cls(h, f"cuda:{device}")

    def close(self):
        if self._h:
            _lib.lib.sd_trim_destroy(self._h)
            self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

    _CODEC_FLAGS = {None: 0, "zero_blocks": 2, "zero_blocks_always": 4}

    def register(self, size, name="", group="", stable_address=False, codec=None):
        """A new buffer; with stable_address its pointer never changes (see trim.h).

        codec: how it crosses to the slower tier: None (as it is), "zero_blocks" (through the
        zero-block codec when it pays, from measured rates) or "zero_blocks_always"."""
        if codec not in self._CODEC_FLAGS:
            raise ValueError(f"codec {codec!r}: expected one of None, 'zero_blocks', "
                             "'zero_blocks_always'")
        flags = (1 if stable_address else 0) | self._CODEC_FLAGS[codec]
        out = ctypes.c_uint64()
        _check(_lib.lib.sd_trim_register_ex(self._h, size, name.encode(), group.encode(),
                                             flags, ctypes.byref(out)),
               self._h)
        return out.value

    def unregister(self, buffer):
        _check(_lib.lib.sd_trim_unregister(self._h, buffer), self._h)

    def acquire(self, buffer):
        """Address of the buffer on the fast tier, valid until release()."""
        p = ctypes.c_void_p()
        _check(_lib.lib.sd_trim_acquire(self._h, buffer, ctypes.byref(p)), self._h)
        return p.value

    def acquire_many(self, ids, ptrs, read_only=True):
        """Acquires every buffer of `ids` (a ctypes uint64 array) in one call; their addresses
        land in `ptrs` (a ctypes void* array of the same length). Nothing is held on error."""
        _check(_lib.lib.sd_trim_acquire_many(self._h, ids, len(ids), 1 if read_only else 0,
                                             ptrs), self._h)

    def release_many(self, ids):
        _check(_lib.lib.sd_trim_release_many(self._h, ids, len(ids)), self._h)

    def prefetch_many(self, ids):
        """Starts bringing back every buffer of `ids` (a ctypes uint64 array) ahead of its use:
        on the copy worker with async_copies (returns at once), else now."""
        _check(_lib.lib.sd_trim_prefetch_many(self._h, ids, len(ids)), self._h)

    def acquire_read(self, buffer):
        """acquire() for a caller that only reads until release()."""
        p = ctypes.c_void_p()
        _check(_lib.lib.sd_trim_acquire_read(self._h, buffer, ctypes.byref(p)), self._h)
        return p.value

    def release(self, buffer):
        _check(_lib.lib.sd_trim_release(self._h, buffer), self._h)

    def step(self):
        _lib.lib.sd_trim_step(self._h)

    def trim(self):
        return _lib.lib.sd_trim_trim(self._h)

    def tier_of(self, buffer):
        t = ctypes.c_int()
        _check(_lib.lib.sd_trim_tier_of(self._h, buffer, ctypes.byref(t)), self._h)
        return t.value

    def lookup(self, address):
        out = ctypes.c_uint64()
        _check(_lib.lib.sd_trim_lookup(self._h, address, ctypes.byref(out)), self._h)
        return out.value

    def stats(self):
        s = _lib.Stats()
        _lib.lib.sd_trim_get_stats(self._h, ctypes.byref(s))
        return s.as_dict()
