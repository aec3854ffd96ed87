"""TrimmedModel: a PyTorch module's parameters and buffers kept by seedance::trim.

Zero-code integration (seed chapter 4.1): wrap a model once, run it as before.

    manager = TrimManager.host(fast_bytes=40 << 20, slow_bytes=512 << 20)   # or .cuda(...)
    model = TrimmedModel(torchvision.models.resnet50(), manager)
    out = model(x)               # layers come back to the fast tier as they run
    model.stats()                # peak, moves, stalls

What it does:
- Every parameter and buffer becomes a buffer of the manager (registered with a stable
  address); its tensor is re-pointed at the library's memory (on CUDA a VMM mapping, on the
  CPU an address-keeping host block), so the tensor the model holds never changes while its
  bytes move between tiers. On CUDA, tensors under 2 MiB share granules of the small-block
  range, where addresses cannot be kept: those stay on the GPU (biases, norms).
- The model is cut into units: each module with parameters or buffers of its own, and whole
  subtrees for modules that use their children's parameters without calling the children
  (attention and transformer layers, which PyTorch runs through fused kernels). A forward
  pre-hook acquires a unit's tensors (nested units count references), a forward hook
  releases them, and the model's own forward hook calls step() once per iteration.
- Units are acquired for reading (inference): a unit that came back keeps its copy on the
  slower tier, so moving it down again costs nothing. To write the tensors (load a state
  dict, an optimizer step) do it inside `with model.all_acquired():`, which needs a budget
  that holds the whole model.
- Training is not supported yet: autograd keeps references to weights for the backward pass
  after the forward hook has released them (saved-tensor hooks would be the way).

While a unit is moved its memory is inaccessible (CPU: PROT_NONE; CUDA: unmapped): touching a
parameter outside forward() or all_acquired() faults instead of reading stale bytes.
"""
import contextlib
import ctypes

import torch
from torch import nn

from .manager import TrimManager

# Modules whose forward may use their children's parameters directly (fused fast paths).
FUSED_UNITS = (nn.MultiheadAttention, nn.TransformerEncoderLayer, nn.TransformerDecoderLayer)


class _DeviceBytes:
    """`n` bytes of device memory at `ptr`, for torch.as_tensor (CUDA array interface)."""

    def __init__(self, ptr, n):
        self.__cuda_array_interface__ = {"shape": (n,), "typestr": "|u1", "data": (ptr, False),
                                         "version": 3, "strides": None, "stream": None}


def _wrap(ptr, nbytes, dtype, shape, device):
    """A tensor of `dtype` and `shape` over the library's memory at `ptr` (no copy)."""
    if device == "cpu":
        raw = torch.frombuffer((ctypes.c_uint8 * nbytes).from_address(ptr), dtype=torch.uint8)
    else:
        raw = torch.as_tensor(_DeviceBytes(ptr, nbytes), device=device)
    assert raw.data_ptr() == ptr, "the wrapped tensor must alias the library's memory"
    return raw.view(dtype).reshape(shape)


class TrimmedModel(nn.Module):
    def __init__(self, model, manager: TrimManager, units=FUSED_UNITS, codec=None):
        """codec: how the tensors cross to the slower tier (TrimManager.register): None,
        "zero_blocks" (when it pays) or "zero_blocks_always". For weights with whole zero
        rows or channels (a pruning mask applied without slicing): only their non-zero
        256-byte blocks move and take room on the slower tier."""
        super().__init__()
        self.model = model
        self.manager = manager
        self._codec = codec
        self._counts = {}   # buffer id -> active acquisitions
        self._ids = {}      # id(tensor) -> buffer id (a shared tensor is registered once)
        self._tensor_of = {}  # id(tensor) -> its view over the library's memory
        self._handles = []
        self._register_tensors()
        self._install_hooks(units)

    # ---- registration ----
    def _register_tensors(self):
        device = self.manager.device
        with torch.no_grad():
            for mname, module in self.model.named_modules():
                for pname, p in list(module.named_parameters(recurse=False)):
                    if p is not None:
                        p.data = self._adopt(p.data, f"{mname}.{pname}", mname, device, id(p))
                for bname, b in list(module.named_buffers(recurse=False)):
                    if b is not None:
                        module._buffers[bname] = self._adopt(b, f"{mname}.{bname}", mname,
                                                             device, id(b))

    def _adopt(self, t, name, group, device, key):
        if key in self._tensor_of:  # shared with a module seen before
            return self._tensor_of[key]
        if t.numel() == 0:
            return t
        nbytes = t.numel() * t.element_size()
        bid = self.manager.register(nbytes, name, group, stable_address=True, codec=self._codec)
        ptr = self.manager.acquire(bid)
        view = _wrap(ptr, nbytes, t.dtype, t.shape, device)
        view.copy_(t.detach().contiguous())
        if device != "cpu":
            torch.cuda.synchronize(device)  # the copy is done before the release
        self.manager.release(bid)
        self._ids[key] = bid
        self._tensor_of[key] = view
        self._counts[bid] = 0
        return view

    def _unit_buffers(self, module, whole_subtree):
        tensors = list(module.parameters(recurse=whole_subtree)) + \
            list(module.buffers(recurse=whole_subtree))
        ids = []
        for t in tensors:
            bid = self._by_address(t)
            if bid is not None and bid not in ids:
                ids.append(bid)
        return ids

    def _by_address(self, t):
        """The buffer whose memory `t` points at (params were re-pointed, not replaced)."""
        for key, view in self._tensor_of.items():
            if view.data_ptr() == t.data_ptr():
                return self._ids[key]
        return None

    # ---- hooks ----
    def _install_hooks(self, units):
        covered = set()
        for module in self.model.modules():
            if id(module) in covered:
                continue
            fused = isinstance(module, units)
            own = any(True for _ in module.parameters(recurse=False)) or \
                any(True for _ in module.buffers(recurse=False))
            if not fused and not own:
                continue
            ids = self._unit_buffers(module, whole_subtree=fused)
            if fused:
                covered.update(id(m) for m in module.modules())
            if not ids:
                continue
            self._handles.append(module.register_forward_pre_hook(
                lambda _m, _in, ids=ids: self._acquire(ids)))
            self._handles.append(module.register_forward_hook(
                lambda _m, _in, _out, ids=ids: self._release(ids)))

    def _acquire(self, ids):
        for bid in ids:
            if self._counts[bid] == 0:
                self.manager.acquire_read(bid)
            self._counts[bid] += 1

    def _release(self, ids):
        # The unit's kernels are issued, maybe not done: the library waits for the device
        # before it moves the memory (the release contract), so no sync here.
        for bid in ids:
            self._counts[bid] -= 1
            if self._counts[bid] == 0:
                self.manager.release(bid)

    # ---- use ----
    def forward(self, *args, **kwargs):
        out = self.model(*args, **kwargs)
        self.manager.step()  # once per iteration
        return out

    @contextlib.contextmanager
    def all_acquired(self):
        """Every tensor on the fast tier and writable (an optimizer step, a state_dict save)."""
        ids = list(self._counts)
        for bid in ids:
            if self._counts[bid] == 0:
                self.manager.acquire(bid)
            self._counts[bid] += 1
        try:
            yield
        finally:
            self._release(ids)

    def stats(self):
        return self.manager.stats()

    def model_bytes(self):
        return sum(t.numel() * t.element_size() for t in self._tensor_of.values())

    def remove_hooks(self):
        for h in self._handles:
            h.remove()
        self._handles.clear()
