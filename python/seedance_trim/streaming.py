"""StreamedModel: a PyTorch model's weights streamed under a budget (weight streaming, issue 41).

    model = StreamedModel(torchvision.models.resnet50().eval(), budget_bytes=40 << 20)
    with torch.no_grad():
        out = model(x)   # the first forward records the units: order, bytes, time; then plans
    model.plan()         # resident bytes, ring, bytes streamed per step, simulated step
    model.stats()        # copies, bytes copied, host waits, hook time per unit

The units are TrimmedModel's: each module with parameters or buffers of its own, and whole
subtrees of modules that run their children's weights through fused kernels (attention,
transformer layers). Each unit's tensors are packed into one block of host memory. The plan
(seedance::trim's StreamPlan) keeps some units resident and streams the rest through a ring:
a forward pre-hook begins the unit (its tensors are pointed at its bytes in the ring, copied
ahead of use by the library's copy thread), and a forward hook ends it (the tensors point back
at their block).

Limits, for now:
- Inference only, on the CPU backend (libseedance_trim's host streamer). The CUDA streamer
  (streams and events) is not built yet.
- On the CPU, every unit's block stays in RAM: the ring shows the mechanism (copies ahead, the
  bytes each step), while the memory saved is the GPU's.
- The recording forward runs the whole model from its blocks.
- Units must not nest, and no tensor may belong to two units (ValueError names them).
- A forward that runs the units in another order (a branch, another input shape) finishes
  from the blocks, and the next forward records and plans again (`stats()["replans"]`).
"""
import ctypes
import time

import torch
from torch import nn

from . import _lib
from .manager import TrimError, _check
from .torch_hooks import FUSED_UNITS

_ALIGN = 64  # bytes: each tensor of a unit's block starts at a multiple


def _link_bytes_per_second(nbytes=64 << 20):
    """The host's copy rate (memcpy of `nbytes`, best of 3): the CPU backend's link."""
    src = torch.empty(nbytes, dtype=torch.uint8)
    dst = torch.empty_like(src)
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        dst.copy_(src)
        best = min(best, time.perf_counter() - t0)
    return nbytes / best


class _Unit:
    def __init__(self, index, module, entries, nbytes):
        self.index = index
        self.module = module
        self.entries = entries  # (owner module, name, is_param, offset, nbytes, dtype, shape)
        self.nbytes = nbytes
        self.block = torch.empty(max(nbytes, 1), dtype=torch.uint8)
        self.home = []  # each entry's view over `block`
        self.seconds = 0.0


class StreamedModel(nn.Module):
    def __init__(self, model, budget_bytes, link_bytes_per_second=None, units=FUSED_UNITS):
        super().__init__()
        self.model = model
        self.budget = int(budget_bytes)
        self.link = link_bytes_per_second
        self._units = self._find_units(units)
        self._by_module = {id(u.module): u for u in self._units}
        self._pack()
        self._stream = None
        self._mode = "record"
        self._order = []          # units in the order the recording forward ran them
        self._t0 = 0.0
        self._hook_seconds = 0.0  # time spent in the hooks while streaming
        self._hook_calls = 0
        self._replans = 0
        self._view_cache = {}
        self._handles = []
        for u in self._units:
            self._handles.append(u.module.register_forward_pre_hook(
                lambda _m, _in, u=u: self._before(u)))
            self._handles.append(u.module.register_forward_hook(
                lambda _m, _in, _out, u=u: self._after(u)))

    # ---- units ----
    def _find_units(self, fused_types):
        found, covered, owner_of = [], set(), {}
        for mname, module in self.model.named_modules():
            if id(module) in covered:
                continue
            fused = isinstance(module, fused_types)
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
                for owner, name, is_param, offset, n, dtype, shape in u.entries:
                    t = getattr(owner, name)
                    view = u.block[offset:offset + n].view(dtype).view(shape)
                    view.copy_(t.detach().contiguous())
                    u.home.append(view)
                self._point(u, u.home)

    @staticmethod
    def _point(u, views):
        for (owner, name, is_param, *_), view in zip(u.entries, views):
            if is_param:
                getattr(owner, name).data = view
            else:
                owner._buffers[name] = view

    def _views_at(self, u, address):
        """The unit's tensors over its bytes at `address` in the ring. The plan repeats, so a
        unit lands at few places: their views are kept, all dropped once they number more
        than 8 per unit on average (a bound on the cache, whatever the ring's laps)."""
        key = (u.index, address)
        views = self._view_cache.get(key)
        if views is None:
            if len(self._view_cache) > 8 * len(self._units):
                self._view_cache.clear()
            raw = torch.frombuffer((ctypes.c_uint8 * u.nbytes).from_address(address),
                                   dtype=torch.uint8)
            views = [raw[offset:offset + n].view(dtype).view(shape)
                     for _, _, _, offset, n, dtype, shape in u.entries]
            self._view_cache[key] = views
        return views

    # ---- recording and planning ----
    def _plan_from_recording(self):
        order = self._order
        if sorted(u.index for u in order) != list(range(len(self._units))):
            raise TrimError(-1, "the recording forward did not run every unit exactly once "
                                "(units that run twice or not at all are not streamed)")
        if self.link is None:
            self.link = _link_bytes_per_second()
        n = len(order)
        sizes = (ctypes.c_uint64 * n)(*[u.nbytes for u in order])
        seconds = (ctypes.c_double * n)(*[u.seconds for u in order])
        hosts = (ctypes.c_void_p * n)(*[u.block.data_ptr() for u in order])
        handle = ctypes.c_void_p()
        _check(_lib.lib.sd_trim_stream_create_host(n, sizes, seconds, hosts, self.budget,
                                                   float(self.link), ctypes.byref(handle)))
        self._close()
        self._view_cache.clear()
        self._stream = handle
        self._position = {u.index: i for i, u in enumerate(order)}

    # ---- hooks ----
    def _before(self, u):
        if self._mode == "record":
            self._t0 = time.perf_counter()
            if u not in self._order:
                self._order.append(u)
            else:
                self._mode = "broken"  # ran twice: record again next forward
            return
        if self._mode != "stream":
            return
        t0 = time.perf_counter()
        ptr = ctypes.c_void_p()
        rc = _lib.lib.sd_trim_stream_begin(self._stream, self._position[u.index],
                                           ctypes.byref(ptr))
        if rc == -4:  # SD_TRIM_EBUSY: not the unit the plan expects
            self._mode = "off"
            return
        _check(rc)
        if ptr.value != u.block.data_ptr():  # streamed: its bytes in the ring
            self._point(u, self._views_at(u, ptr.value))
        self._hook_seconds += time.perf_counter() - t0
        self._hook_calls += 1

    def _after(self, u):
        if self._mode == "record":
            u.seconds = time.perf_counter() - self._t0
            return
        if self._mode != "stream":
            return
        t0 = time.perf_counter()
        self._point(u, u.home)  # nothing outside the unit's forward sees the ring
        _check(_lib.lib.sd_trim_stream_end(self._stream, self._position[u.index]))
        self._hook_seconds += time.perf_counter() - t0

    # ---- use ----
    def forward(self, *args, **kwargs):
        if torch.is_grad_enabled() and any(p.requires_grad for p in self.model.parameters()):
            raise RuntimeError("StreamedModel streams for inference only: run it under "
                               "torch.no_grad() (training is not streamed yet)")
        if self._mode in ("off", "broken"):  # the order changed: record this forward again
            self._replans += 1
            self._order = []
            self._mode = "record"
        out = self.model(*args, **kwargs)
        if self._mode == "record":
            self._plan_from_recording()
            self._mode = "stream"
        elif self._mode == "off":
            for u in self._units:
                self._point(u, u.home)
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
        out["hook_us_per_unit"] = (self._hook_seconds / self._hook_calls * 1e6
                                   if self._hook_calls else 0.0)
        return out

    def model_bytes(self):
        return sum(u.nbytes for u in self._units)

    def _close(self):
        if self._stream is not None:
            _lib.lib.sd_trim_stream_destroy(self._stream)
            self._stream = None

    def remove_hooks(self):
        for h in self._handles:
            h.remove()
        self._handles.clear()

    def __del__(self):
        if "_stream" in self.__dict__:  # not when __init__ raised before it
            self._close()
