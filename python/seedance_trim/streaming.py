"""StreamedModel: a PyTorch model's weights streamed under a budget (weight streaming, issue 41).

    model = StreamedModel(torchvision.models.resnet50().eval(), budget_bytes=40 << 20,
                          device="cuda")       # or "cpu" (the default for a model on the CPU)
    with torch.no_grad():
        out = model(x)   # the first forward records the units: order, bytes, time; then plans
    model.plan()         # resident bytes, ring, bytes streamed per step, simulated step
    model.stats()        # copies, bytes copied, host waits, hook time per unit

The units are TrimmedModel's: each module with parameters or buffers of its own, and whole
subtrees of modules that run their children's weights through fused kernels (attention,
transformer layers). Each unit's tensors are packed into one block of host memory (pinned for
CUDA). The plan (seedance::trim's StreamPlan) keeps some units resident on the device and streams
the rest through a ring: a forward pre-hook begins the unit (its tensors are pointed at its bytes
in the ring, copied ahead of use) and a forward hook ends it (they point back at their block).

Two backends, one library call per hook:
- "cpu": libseedance_trim's host streamer (a copy thread; the ring in RAM). Every block stays in
  RAM, so this shows the mechanism (copies ahead, the bytes each step), not the memory saved.
- "cuda": the CUDA streamer. The ring and the resident units are device memory taken from
  PyTorch's allocator; copies run on the library's copy stream, PyTorch's current stream waits
  for them on the device and each unit's end records the event that frees its place in the ring.
  Nothing waits on the host. The units' times are recorded with CUDA events. Embedding tables
  are not streamed: the gather kernel reads them in place from their pinned blocks
  (zero_copy_embeddings). Written, but not yet run on a GPU (scripts/gpu-check --stream runs it).

Limits, for now:
- Inference only: training is TrimmedModel's (torch_hooks.py).
- The recording forward copies each unit to the device (CUDA) or uses its block (CPU) as it runs.
- Units must not nest, and no tensor may belong to two units (ValueError names them).
- A forward that runs the units in another order (a branch, another input shape), or on another
  CUDA stream, finishes as the recording forward does, and the next forward records and plans
  again (`stats()["replans"]`).
- Outside a forward, a streamed unit's tensors are its block in host memory.
"""
import ctypes
import time

import torch
from torch import nn
from torch.nn.utils import parametrize

from . import _lib
from .autocast_weights import autocast_check
from .manager import TrimError, _check
from .torch_hooks import FUSED_UNITS, register_first_pre_hook

# Bytes: each tensor of a unit's block starts at a multiple, as in PyTorch's own allocations
# (kernels pick vectorized paths by alignment, so a weight computes the same bytes wherever
# it lives).
_ALIGN = 256


class _Unit:
    def __init__(self, index, module, entries, nbytes):
        self.index = index
        self.module = module
        self.entries = entries  # (owner module, name, is_param, offset, nbytes, dtype, shape)
        # Where each entry is pointed (_point): the Parameter itself (its .data is set; the
        # object stays the one the model and optimizers hold), or its owner's buffer dict and
        # name. Looked up once: Module.__getattr__ per tensor per hook cost most of a hook.
        self.slots = [(getattr(owner, name), None) if is_param else (owner._buffers, name)
                      for owner, name, is_param, *_ in entries]
        self.nbytes = nbytes
        self.block = None      # its bytes in host memory (the backend makes it)
        self.block_views = []  # each entry's view over `block`
        self.home = []         # where its tensors point outside its forward
        self.seconds = 0.0
        self._t0 = 0.0  # the CPU backend's recording clock

    def views(self, raw):
        return [raw[offset:offset + n].view(dtype).view(shape)
                for _, _, _, offset, n, dtype, shape in self.entries]


class _HostBackend:
    """The CPU backend: blocks in RAM, the library's host streamer and its ring."""
    device = torch.device("cpu")

    def __init__(self):
        self._view_cache = {}
        self._cache_bound = 0

    def new_block(self, nbytes):
        return torch.empty(max(nbytes, 1), dtype=torch.uint8)

    def link_bytes_per_second(self, nbytes=64 << 20):
        """The host's copy rate (memcpy of `nbytes`, best of 3): the CPU backend's link."""
        src = torch.empty(nbytes, dtype=torch.uint8)
        dst = torch.empty_like(src)
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            dst.copy_(src)
            best = min(best, time.perf_counter() - t0)
        return nbytes / best

    # The recording (and an abandoned plan's) forward: the unit computes from its block.
    def direct_views(self, u):
        return u.home

    def start_timing(self, u):
        u._t0 = time.perf_counter()

    def stop_timing(self, u):
        u.seconds = time.perf_counter() - u._t0

    def finish_recording(self, order):
        pass  # wall times, taken as the units ran

    def create(self, order, plan_info, resident, budget, link):
        n = len(order)
        self._cache_bound = 8 * n
        sizes = (ctypes.c_uint64 * n)(*[u.nbytes for u in order])
        seconds = (ctypes.c_double * n)(*[u.seconds for u in order])
        hosts = (ctypes.c_void_p * n)(*[u.block.data_ptr() for u in order])
        handle = ctypes.c_void_p()
        _check(_lib.lib.sd_trim_stream_create_host(n, sizes, seconds, hosts, budget,
                                                   float(link), ctypes.byref(handle)))
        self._view_cache.clear()
        return handle  # a resident unit is used where it is (the library plans the same)

    def ring_views(self, u, address):
        """The unit's tensors over its bytes at `address` in the ring. The plan repeats, so a
        unit lands at few places: their views are kept, all dropped once they number more
        than 8 per unit on average (a bound on the cache, whatever the ring's laps)."""
        key = (u.index, address)
        views = self._view_cache.get(key)
        if views is None:
            if len(self._view_cache) > self._cache_bound:
                self._view_cache.clear()
            raw = torch.frombuffer((ctypes.c_uint8 * u.nbytes).from_address(address),
                                   dtype=torch.uint8)
            views = u.views(raw)
            self._view_cache[key] = views
        return views

    def stream_changed(self):
        return False

    def release(self, units):
        self._view_cache.clear()


class _Mapped:
    """A pinned block seen through __cuda_array_interface__ (torch.as_tensor then makes a CUDA
    tensor at the same address, and keeps this object, so the block, alive)."""

    def __init__(self, block):
        self._block = block
        self.__cuda_array_interface__ = {"shape": (block.numel(),), "typestr": "|u1",
                                         "data": (block.data_ptr(), False), "version": 2}


class _CudaBackend:
    """The CUDA backend: pinned blocks; the ring and resident units in device memory from
    PyTorch's allocator; the library's CUDA streamer on PyTorch's current stream."""

    def __init__(self, device):
        self.device = torch.device(device)
        if not torch.cuda.is_available():
            raise RuntimeError(f"StreamedModel on {self.device}: CUDA is not available to "
                               "PyTorch here (streaming on the CPU: device='cpu')")
        if self.device.index is None:
            self.device = torch.device("cuda", torch.cuda.current_device())
        self._scratch = None  # the recording forward's place for one unit at a time
        self._ring = None
        self._resident = {}   # unit index -> its device tensor
        self._events = {}     # unit index -> (start, end) of the recording forward
        self._view_cache = {}
        self._cache_bound = 0
        self._compute_stream = None

    def new_block(self, nbytes):
        return torch.empty(max(nbytes, 1), dtype=torch.uint8, pin_memory=True)

    def link_bytes_per_second(self, nbytes=256 << 20):
        """Pinned host to device (the copy the streamer makes), best of 3."""
        src = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
        dst = torch.empty(nbytes, dtype=torch.uint8, device=self.device)
        best = float("inf")
        for _ in range(3):
            torch.cuda.synchronize(self.device)
            t0 = time.perf_counter()
            dst.copy_(src, non_blocking=True)
            torch.cuda.synchronize(self.device)
            best = min(best, time.perf_counter() - t0)
        del dst
        return nbytes / best

    def direct_views(self, u):
        if u.index in self._resident:
            return u.home
        largest = max(u.nbytes, 1)
        if self._scratch is None or self._scratch.numel() < largest:
            self._scratch = torch.empty(largest, dtype=torch.uint8, device=self.device)
        # On the current stream, after the unit before it has computed from the same place.
        self._scratch[:u.nbytes].copy_(u.block[:u.nbytes], non_blocking=True)
        return u.views(self._scratch)

    def start_timing(self, u):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        self._events[u.index] = (start, end)

    def stop_timing(self, u):
        self._events[u.index][1].record()

    def finish_recording(self, order):
        torch.cuda.synchronize(self.device)
        for u in order:
            start, end = self._events[u.index]
            u.seconds = start.elapsed_time(end) / 1e3
        self._events.clear()

    def create(self, order, plan_info, resident, budget, link):
        self._scratch = None  # not part of the budget once streaming
        self._cache_bound = 8 * len(order)
        n = len(order)
        sizes = (ctypes.c_uint64 * n)(*[u.nbytes for u in order])
        seconds = (ctypes.c_double * n)(*[u.seconds for u in order])
        self._ring = torch.empty(max(plan_info.ring_bytes, 1), dtype=torch.uint8,
                                 device=self.device)
        on_device = (ctypes.c_void_p * n)()
        for i, u in enumerate(order):
            if resident[i]:
                t = torch.empty(max(u.nbytes, 1), dtype=torch.uint8, device=self.device)
                t[:u.nbytes].copy_(u.block[:u.nbytes])
                self._resident[u.index] = t
                on_device[i] = t.data_ptr()
                u.home = u.views(t)
        hosts = (ctypes.c_void_p * n)(*[u.block.data_ptr() for u in order])
        self._compute_stream = torch.cuda.current_stream(self.device)
        handle = ctypes.c_void_p()
        rc = _lib.lib.sd_trim_stream_create_cuda(
            n, sizes, seconds, hosts, on_device, self._ring.data_ptr(), self._ring.numel(),
            budget, float(link), self.device.index,
            ctypes.c_void_p(self._compute_stream.cuda_stream), ctypes.byref(handle))
        if rc != 0:
            message = _lib.lib.sd_trim_last_error(None).decode(errors="replace")
            self.release(order)
            raise TrimError(rc, message)
        self._view_cache.clear()
        return handle

    def mapped_views(self, u):
        """The unit's tensors as CUDA tensors over its pinned block, read in place by kernels
        (unified addressing: a pinned block's host address is its device address)."""
        raw = torch.as_tensor(_Mapped(u.block), device=self.device)
        if raw.data_ptr() != u.block.data_ptr():
            raise RuntimeError("PyTorch copied the pinned block instead of mapping it")
        return u.views(raw)

    def ring_views(self, u, address):
        """Slices of the ring tensor: a unit lands at few offsets (the plan repeats)."""
        offset = address - self._ring.data_ptr()
        key = (u.index, offset)
        views = self._view_cache.get(key)
        if views is None:
            if len(self._view_cache) > self._cache_bound:
                self._view_cache.clear()
            views = u.views(self._ring[offset:offset + u.nbytes])
            self._view_cache[key] = views
        return views

    def stream_changed(self):
        return (self._compute_stream is not None and
                torch.cuda.current_stream(self.device) != self._compute_stream)

    def release(self, units):
        """After the streamer is destroyed (its copies done): resident units back to their
        blocks, the ring and their device memory returned to PyTorch."""
        for u in units:
            u.home = u.block_views
        self._resident.clear()
        self._ring = None
        self._view_cache.clear()
        self._compute_stream = None


class _HookClock:
    """The hooks' time and count, kept off the module: every attribute an nn.Module sets goes
    through Module.__setattr__ (2 µs a time, most of a hook's cost)."""
    __slots__ = ("seconds", "calls")

    def __init__(self):
        self.seconds = 0.0
        self.calls = 0


class StreamedModel(nn.Module):
    def __init__(self, model, budget_bytes, link_bytes_per_second=None, units=FUSED_UNITS,
                 device=None, zero_copy_embeddings=True):
        """device: "cpu" or a CUDA device; by default the device of the model's first
        parameter (a model on the GPU is moved to pinned blocks, freeing its device memory).
        zero_copy_embeddings (CUDA): embedding tables are not streamed but read in place from
        their pinned blocks by the gather kernel (a lookup reads a few rows, not the table);
        they take nothing of the budget. Tables with max_norm (rewritten by lookups) stream."""
        super().__init__()
        self.model = model
        self.budget = int(budget_bytes)
        self.link = link_bytes_per_second
        if device is None:
            first = next(iter(model.parameters()), None)
            device = first.device if first is not None else "cpu"
        device = torch.device(device)
        self._backend = _CudaBackend(device) if device.type == "cuda" else _HostBackend()
        self._autocast_on = autocast_check("cpu" if device.type == "cpu" else "cuda")
        self._units = self._find_units(units)
        self._pack()
        self._zero_copy = []  # units read in place from their blocks (CUDA)
        self._zero_copy_error = None
        if zero_copy_embeddings and isinstance(self._backend, _CudaBackend):
            self._map_embeddings()
        self._stream = None
        self._mode = "record"
        self._order = []          # units in the order the recording forward ran them
        self._resident = set()    # unit indices the plan keeps on the device
        self._clock = _HookClock()  # time spent in the hooks while streaming
        self._replans = 0
        self._handles = []
        for u in self._units:
            self._handles.append(register_first_pre_hook(
                u.module, lambda _m, _in, u=u: self._before(u)))
            self._handles.append(u.module.register_forward_hook(
                lambda _m, _in, _out, u=u: self._after(u)))

    @property
    def device(self):
        return self._backend.device

    # ---- units ----
    def _find_units(self, fused_types):
        found, covered, owner_of = [], set(), {}
        for mname, module in self.model.named_modules():
            if id(module) in covered:
                continue
            fused = isinstance(module, fused_types) or parametrize.is_parametrized(module)
            own = list(module.named_parameters(recurse=False)) + \
                list(module.named_buffers(recurse=False))
            if not fused and not any(t is not None for _, t in own):
                continue
            members = list(module.modules()) if fused else [module]
            if fused:
                covered.update(id(m) for m in members)
            entries = []
            for owner in members:
                for name, t in list(owner.named_parameters(recurse=False)) + \
                        list(owner.named_buffers(recurse=False)):
                    if t is None or t.numel() == 0:
                        continue
                    if id(t) in owner_of:
                        raise ValueError(f"{mname}: a tensor shared with unit "
                                         f"{owner_of[id(t)]!r} (tied weights are not streamed)")
                    owner_of[id(t)] = mname
                    entries.append((owner, name, isinstance(t, nn.Parameter), t))
            if entries:
                found.append((mname, module, entries))
        names = [n for n, _, _ in found]
        for n in names:  # a unit inside another would begin before the outer one ends
            inner = [m for m in names if m != n and (n == "" or m.startswith(n + "."))]
            if inner:
                raise ValueError(f"unit {n or '(the model)'} holds units {inner[:3]}: nested "
                                 "units are not streamed (TrimmedModel handles them)")
        units = []
        for i, (mname, module, entries) in enumerate(found):
            packed, offset = [], 0
            for owner, name, is_param, t in entries:
                offset = (offset + _ALIGN - 1) // _ALIGN * _ALIGN
                n = t.numel() * t.element_size()
                packed.append((owner, name, is_param, offset, n, t.dtype, tuple(t.shape)))
                offset += n
            units.append(_Unit(i, module, packed, offset))
        return units

    def _pack(self):
        """Copies each unit's tensors into its block and points them there."""
        with torch.no_grad():
            for u in self._units:
                u.block = self._backend.new_block(u.nbytes)
                u.block_views = u.views(u.block)
                for (owner, name, *_), view in zip(u.entries, u.block_views):
                    view.copy_(getattr(owner, name).detach().contiguous())
                u.home = u.block_views
                self._point(u, u.home)

    def _map_embeddings(self):
        kept = []
        for u in self._units:
            m = u.module
            if isinstance(m, (nn.Embedding, nn.EmbeddingBag)) and m.max_norm is None and \
                    self._zero_copy_error is None:
                try:
                    u.home = self._backend.mapped_views(u)
                except (RuntimeError, TypeError, ValueError) as e:  # PyTorch would not map it
                    self._zero_copy_error = f"{type(e).__name__}: {e}"
                    kept.append(u)
                    continue
                self._point(u, u.home)
                self._zero_copy.append(u)
            else:
                kept.append(u)
        for i, u in enumerate(kept):  # the planned units, numbered again
            u.index = i
        self._units = kept

    @staticmethod
    def _point(u, views):
        for (target, name), view in zip(u.slots, views):
            if name is None:
                target.data = view  # a Parameter
            else:
                target[name] = view  # a buffer in its module's _buffers

    # ---- recording and planning ----
    def _plan_from_recording(self):
        order = self._order
        if sorted(u.index for u in order) != list(range(len(self._units))):
            raise TrimError(-1, "the recording forward did not run every unit exactly once "
                                "(units that run twice or not at all are not streamed)")
        self._backend.finish_recording(order)  # each unit's compute seconds
        if self.link is None:
            self.link = self._backend.link_bytes_per_second()
        n = len(order)
        sizes = (ctypes.c_uint64 * n)(*[u.nbytes for u in order])
        seconds = (ctypes.c_double * n)(*[u.seconds for u in order])
        resident = (ctypes.c_uint8 * n)()
        info = _lib.StreamPlanInfo()
        _check(_lib.lib.sd_trim_stream_plan(n, sizes, seconds, self.budget, float(self.link),
                                            resident, ctypes.byref(info)))
        self._close()
        self._stream = self._backend.create(order, info, resident, self.budget, self.link)
        self._resident = {u.index for i, u in enumerate(order) if resident[i]}
        self._position = {u.index: i for i, u in enumerate(order)}
        for u in self._units:  # resident units now live on the device (CUDA)
            self._point(u, u.home)

    # ---- hooks ----
    def _before(self, u):
        if self._mode == "stream":
            t0 = time.perf_counter()
            ptr = ctypes.c_void_p()
            rc = _lib.lib.sd_trim_stream_begin(self._stream, self._position[u.index],
                                               ctypes.byref(ptr))
            if rc == -4:  # SD_TRIM_EBUSY: not the unit the plan expects
                self._mode = "off"
            else:
                _check(rc)
                if u.index not in self._resident:  # streamed: its bytes in the ring
                    self._point(u, self._backend.ring_views(u, ptr.value))
                clock = self._clock
                clock.seconds += time.perf_counter() - t0
                clock.calls += 1
                return
        # Recording, or the plan abandoned for this forward: the unit computes from its
        # block (CPU) or a copy of it made now (CUDA).
        self._point(u, self._backend.direct_views(u))
        if self._mode == "record":
            if u not in self._order:
                self._order.append(u)
            else:
                self._mode = "broken"  # ran twice: record again next forward
            self._backend.start_timing(u)

    def _after(self, u):
        if self._autocast_on():  # its copies of the unit's weights (autocast_weights.py)
            torch.clear_autocast_cache()
        if self._mode == "stream":
            t0 = time.perf_counter()
            if u.index not in self._resident:
                self._point(u, u.home)  # nothing outside the unit's forward sees the ring
            _check(_lib.lib.sd_trim_stream_end(self._stream, self._position[u.index]))
            self._clock.seconds += time.perf_counter() - t0
            return
        if self._mode == "record" and u in self._order:
            self._backend.stop_timing(u)
        self._point(u, u.home)

    # ---- use ----
    def forward(self, *args, **kwargs):
        if torch.is_grad_enabled() and any(p.requires_grad for p in self.model.parameters()):
            raise RuntimeError("StreamedModel streams for inference only: run it under "
                               "torch.no_grad() (training is not streamed yet)")
        if self._mode == "stream" and self._backend.stream_changed():
            self._mode = "off"  # another CUDA stream than the plan's: record again
        if self._mode in ("off", "broken"):  # the order changed: record this forward again
            self._replans += 1
            self._close()
            self._order = []
            self._mode = "record"
        out = self.model(*args, **kwargs)
        if self._mode == "record":
            self._plan_from_recording()
            self._mode = "stream"
        return out

    def plan(self):
        info = _lib.StreamPlanInfo()
        if self._stream is not None:
            _lib.lib.sd_trim_stream_get_info(self._stream, ctypes.byref(info))
        return info.as_dict()

    def stats(self):
        s = _lib.StreamStats()
        if self._stream is not None:
            _lib.lib.sd_trim_stream_get_stats(self._stream, ctypes.byref(s))
        out = s.as_dict()
        out["replans"] = self._replans
        out["zero_copy_bytes"] = sum(u.nbytes for u in self._zero_copy)
        if self._zero_copy_error is not None:
            out["zero_copy_error"] = self._zero_copy_error
        out["hook_us_per_unit"] = (self._clock.seconds / self._clock.calls * 1e6
                                   if self._clock.calls else 0.0)
        return out

    def model_bytes(self):
        return sum(u.nbytes for u in self._units + self._zero_copy)

    def _close(self):
        """Destroys the streamer (it waits for its copies), then gives its device memory
        back; every unit's tensors point at its block."""
        if self._stream is not None:
            _lib.lib.sd_trim_stream_destroy(self._stream)
            self._stream = None
        if "_backend" in self.__dict__:
            self._backend.release(self._units)
            for u in self._units:
                self._point(u, u.home)
        self._resident = set()

    def remove_hooks(self):
        for h in self._handles:
            h.remove()
        self._handles.clear()

    def __del__(self):
        if "_stream" in self.__dict__:  # not when __init__ raised before it
            self._close()
