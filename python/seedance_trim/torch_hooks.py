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
  slower tier, so moving it down again costs nothing. state_dict() copies each module's
  tensors out and load_state_dict() copies in, one module at a time (state_dict_hooks.py);
  optimizer_step() steps one buffer at a time. To write the tensors any other way, do it
  inside `with model.all_acquired():`, which needs a budget that holds the whole model.
- Training (issue 41): with grad enabled, a saved-tensor hook marks each weight autograd saves
  for the backward pass, and brings its buffer back when the backward pass unpacks it. The
  buffers of the unit (module) being unpacked and of the one before stay acquired: autograd
  runs one node at a time and a node uses one module's weights, so the unit before that is done
  with. The backward pass runs the units in the reverse of the order the forward saved their
  weights: when it reaches one, the one before it starts coming back (backward_prefetch; on
  the copy worker with async_copies, so the copy overlaps this unit's gradients). The budget
  must hold the two largest units; a prefetch that finds no room for a third is skipped
  (stats()["backward_prefetches_refused"]). In train mode the forward acquires for writing
  (batch norm updates its running statistics). `optimizer_step(optimizer)` steps unit by unit,
  each acquired for writing in turn, so the budget never has to hold the whole model.
  Gradients stay where autograd put them, or with gradients="cpu" move to host memory as they
  are produced (offloaded_grads.py); optimizer_step brings each back for its update.
  With create_graph=True (double backward), a weight unpacked with grad enabled pushes the
  hooks for the rest of its node, so the weights the recorded backward saves are marked too.
- Under torch.autocast, each unit's forward hook clears autocast's cache of weight copies, and
  a copy autograd saves is cast again in the backward pass instead (autocast_weights.py).

Activations: activations="cpu" keeps what autograd saves for the backward pass in pinned host
memory (torch.autograd.graph.save_on_cpu cannot wrap a TrimmedModel: its hooks come first).
Or checkpoint them: torch.utils.checkpoint(use_reentrant=True) inside the model runs a segment
again in the backward pass, outside forward(). A unit that runs with grad enabled outside
forward() pushes the saved-tensor hooks itself, so the recomputation's weights come back one
unit at a time like the rest; a new segment first lets go of the units the backward pass held.
use_reentrant=False is refused with the reason (recomputation.py).

While a unit is moved its memory is inaccessible (CPU: PROT_NONE; CUDA: unmapped): touching a
parameter outside forward() or all_acquired() faults instead of reading stale bytes (a
state_dict() holds copies, so torch.save of it is safe).
"""
import contextlib
import ctypes

import torch
from torch import nn
from torch.nn.utils import parametrize

from . import optimizer_guard, state_dict_hooks
from .manager import TrimError, TrimManager
from .autocast_weights import LOW_PRECISION, SavedCast, autocast_check, cast_weight
from .offloaded_grads import OffloadedGrads
from .recomputation import RunPhase, refuse_non_reentrant

# Units (modules) whose buffers the backward pass unpacked that stay acquired (module doc).
_BACKWARD_HELD_UNITS = 2
_ENOSPACE = -3  # SD_TRIM_ENOSPACE


class _Saved:
    """A weight autograd saved for the backward pass: its buffer and the tensor."""

    __slots__ = ("bid", "tensor")

    def __init__(self, bid, tensor):
        self.bid = bid
        self.tensor = tensor

    def value(self):
        return self.tensor


_SAVED_WEIGHTS = (_Saved, SavedCast)


class _OnCpu:
    """An activation autograd saved, kept in pinned host memory until the backward pass
    (activations="cpu"; what torch.autograd.graph.save_on_cpu does, inside TrimmedModel's own
    saved-tensor hooks, which would otherwise hide an outer save_on_cpu)."""

    __slots__ = ("device", "tensor")

    def __init__(self, t):
        self.device = t.device
        self.tensor = torch.empty(t.size(), dtype=t.dtype, layout=t.layout, pin_memory=True)
        self.tensor.copy_(t)

    def back(self):
        return self.tensor.to(self.device, non_blocking=True)


class _UnitIds:
    """A unit's buffer ids, and the ctypes arrays its one-call acquire and release use."""

    __slots__ = ("ids", "array", "ptrs")

    def __init__(self, ids):
        self.ids = ids
        self.array = (ctypes.c_uint64 * len(ids))(*ids)
        self.ptrs = (ctypes.c_void_p * len(ids))()


def _storage_ptr(t):
    storage = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    return storage.data_ptr()


# Modules whose forward may use their children's parameters directly (fused fast paths).
# Parametrized modules (torch.nn.utils.parametrize) are whole units too: their weight is
# computed from a parameter of a child that is never called.
FUSED_UNITS = (nn.MultiheadAttention, nn.TransformerEncoderLayer, nn.TransformerDecoderLayer)


def register_first_pre_hook(module, hook):
    """A forward pre-hook that runs before the module's others: those may read its
    parameters (torch.nn.utils.prune and weight_norm compute the weight in one)."""
    try:
        return module.register_forward_pre_hook(hook, prepend=True)  # torch >= 2.0
    except TypeError:
        handle = module.register_forward_pre_hook(hook)
        module._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle


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
    def __init__(self, model, manager: TrimManager, units=FUSED_UNITS, codec=None,
                 backward_prefetch=True, activations="device", gradients="device"):
        """codec: how the tensors cross to the slower tier (TrimManager.register): None,
        "zero_blocks" (when it pays) or "zero_blocks_always". For weights with whole zero
        rows or channels (a pruning mask applied without slicing): only their non-zero
        256-byte blocks move and take room on the slower tier.
        backward_prefetch: when the backward pass reaches a unit, the unit before it in the
        forward (the next the backward pass needs) starts coming back, on the copy worker
        when the manager's policy has async_copies (module doc).
        activations: "device" (autograd's default) or "cpu": in training, the activations
        autograd saves for the backward pass wait in pinned host memory instead of the GPU
        (torch.autograd.graph.save_on_cpu's method; that context around a TrimmedModel has no
        effect, since the model's own saved-tensor hooks come first).
        gradients: "device" (autograd's default) or "cpu": each parameter's gradient moves to
        (pinned) host memory once autograd has accumulated it, so the backward pass does not
        hold the whole model's gradients; optimizer_step brings each back for its update and
        consumes it, and zero_grad() drops them (offloaded_grads.py)."""
        if activations not in ("device", "cpu"):
            raise ValueError(f"activations must be 'device' or 'cpu', not {activations!r}")
        if gradients not in ("device", "cpu"):
            raise ValueError(f"gradients must be 'device' or 'cpu', not {gradients!r}")
        super().__init__()
        self.model = model
        self.manager = manager
        self._codec = codec
        self._counts = {}   # buffer id -> active acquisitions
        self._ids = {}      # id(tensor) -> buffer id (a shared tensor is registered once)
        self._tensor_of = {}  # id(tensor) -> its view over the library's memory
        self._by_storage = {}  # a view's address -> its buffer id (saved-tensor hooks)
        self._group_of = {}  # buffer id -> its module's name (its unit for the backward pass)
        self._name_of = {}   # buffer id -> its tensor's name (for messages)
        self._stepping = False  # inside optimizer_step (optimizer_guard lets its steps pass)
        self._backward_held = {}  # unit -> buffers the backward pass unpacked, oldest unit first
        self._backward_prefetch = backward_prefetch
        self._activations_on_cpu = activations == "cpu"
        self._prefetches_refused = 0  # backward prefetches the fast tier had no room for
        self._autocast_on = autocast_check(manager.device)
        self._weight_casts_redone = 0  # autocast copies of weights cast again in the backward
        self._saved_order = []  # units in the order the forward saved their weights; None
        #                         between recomputed segments (no prefetch across one)
        self._saved_at = {}     # unit -> its place in _saved_order
        self._saved_ids = {}    # unit -> ctypes array of its saved buffers (for prefetch_many)
        self._phase = RunPhase()  # in forward(), or recomputing outside it (plain attributes:
        #                           each nn.Module.__setattr__ costs about 2 µs)
        self._handles = []
        self._register_tensors()
        self._install_hooks(units)
        self._handles.extend(state_dict_hooks.install(self))
        self._grads_off = None
        if gradients == "cpu":
            self._grads_off = OffloadedGrads(self.model.parameters())
            self._handles.extend(self._grads_off.handles)
        optimizer_guard.watch(self)

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
        self._by_storage[view.data_ptr()] = bid
        self._group_of[bid] = group
        self._name_of[bid] = name.lstrip(".")
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
            fused = isinstance(module, units) or parametrize.is_parametrized(module)
            own = any(True for _ in module.parameters(recurse=False)) or \
                any(True for _ in module.buffers(recurse=False))
            if not fused and not own:
                continue
            ids = self._unit_buffers(module, whole_subtree=fused)
            if fused:
                covered.update(id(m) for m in module.modules())
            if not ids:
                continue
            unit = _UnitIds(ids)
            self._handles.append(register_first_pre_hook(
                module, lambda _m, _in, unit=unit: self._acquire_unit(unit)))
            self._handles.append(module.register_forward_hook(  # after the module's own
                lambda _m, _in, _out, unit=unit: self._release_unit(unit)))

    def _acquire_unit(self, unit):
        """The forward pre-hook: a unit's buffers in one library call when none is held yet
        (the common case)."""
        phase = self._phase
        if not phase.in_forward and phase.unit is None and torch.is_grad_enabled():
            self._begin_recomputation(unit)
        counts = self._counts
        if any(counts[bid] for bid in unit.ids):  # nested units: one by one
            return self._acquire(unit.ids)
        self.manager.acquire_many(unit.array, unit.ptrs, read_only=not self.model.training)
        for bid in unit.ids:
            counts[bid] = 1

    def _release_unit(self, unit):
        """The forward hook."""
        if self._phase.unit is unit:
            self._phase.end()
        if self._autocast_on():  # its copies of this unit's weights (autocast_weights.py)
            torch.clear_autocast_cache()
        counts = self._counts
        if any(counts[bid] != 1 for bid in unit.ids):
            return self._release(unit.ids)
        for bid in unit.ids:
            counts[bid] = 0
        self.manager.release_many(unit.array)

    def _acquire(self, ids, write=None):
        # In train mode a forward may write (batch norm's running statistics): no kept copy.
        if write is None:
            write = self.model.training
        for bid in ids:
            if self._counts[bid] == 0:
                if write:
                    self.manager.acquire(bid)
                else:
                    self.manager.acquire_read(bid)
            self._counts[bid] += 1

    def _release(self, ids):
        # The unit's kernels are issued, maybe not done: the library waits for the device
        # before it moves the memory (the release contract), so no sync here.
        for bid in ids:
            self._counts[bid] -= 1
            if self._counts[bid] == 0:
                self.manager.release(bid)

    # ---- recomputation (activation checkpointing) ----
    def _begin_recomputation(self, unit):
        """A unit runs with grad enabled outside forward(): a reentrant checkpoint's
        recomputation in the backward pass (or a direct call). Its weights are marked for the
        backward pass like the forward's (recomputation.py)."""
        refuse_non_reentrant()
        phase = self._phase
        if phase.new_segment:  # the backward nodes before this segment have run
            self._release_backward()
            self._saved_order.append(None)
            phase.new_segment = False
        phase.begin(unit, torch.autograd.graph.saved_tensors_hooks(self._pack_recomputed,
                                                                    self._unpack))

    # ---- the backward pass ----
    def _pack(self, t):
        return self._mark(t, self._activations_on_cpu)

    def _pack_recomputed(self, t):
        return self._mark(t, False)  # the backward pass uses it right away: no copy to the host

    def _mark(self, t, activation_to_cpu):
        bid = self._by_storage.get(_storage_ptr(t))
        if bid is None:
            if t.dtype in LOW_PRECISION:  # maybe autocast's copy of a weight
                cast = cast_weight(t, self._by_storage)
                if cast is not None:
                    self._note_saved(cast[0])
                    return SavedCast(cast[0], cast[1], t)
            if activation_to_cpu and t.device.type != "cpu":
                return _OnCpu(t)
            return t
        self._note_saved(bid)
        return _Saved(bid, t)

    def _note_saved(self, bid):
        """The order units saved weights in, for the backward prefetch."""
        if self._backward_prefetch:
            unit = self._group_of[bid]
            if unit not in self._saved_at:
                self._saved_at[unit] = len(self._saved_order)
                self._saved_order.append(unit)
                self._saved_ids[unit] = [bid]
            elif bid not in self._saved_ids[unit]:
                self._saved_ids[unit].append(bid)

    def _prefetch_before(self, unit):
        """The unit the forward saved before `unit`: the backward pass needs it next."""
        at = self._saved_at.get(unit, 0)
        before = self._saved_order[at - 1] if at else None
        if before is None:  # the first unit, or the first of a recomputed segment
            return
        ids = self._saved_ids[before]
        if not isinstance(ids, ctypes.Array):
            ids = self._saved_ids[before] = (ctypes.c_uint64 * len(ids))(*ids)
        try:
            self.manager.prefetch_many(ids)
        except TrimError as e:
            if e.code != _ENOSPACE:
                raise
            self._prefetches_refused += 1  # a hint: the unpack brings it back when needed

    def _unpack(self, saved):
        if isinstance(saved, _OnCpu):
            return saved.back()
        if not isinstance(saved, _SAVED_WEIGHTS):
            return saved
        self._phase.new_segment = True  # a recomputation after this one is another segment
        unit = self._group_of[saved.bid]
        held = self._backward_held.pop(unit, None)
        if held is None:  # a new unit: the one two units back is done with
            held = []
            while len(self._backward_held) >= _BACKWARD_HELD_UNITS:
                oldest = next(iter(self._backward_held))
                self._release(self._backward_held.pop(oldest))

        self._backward_held[unit] = held  # the most recent unit last
        if saved.bid not in held:
            self._acquire([saved.bid], write=False)  # back at the same address
            if not held and self._backward_prefetch:  # this unit's first: start the next
                self._prefetch_before(unit)
            held.append(saved.bid)
        if torch.is_grad_enabled():
            # create_graph=True (a gradient penalty, double backward): this node's formula is
            # recorded and saves the weight again, for the next backward pass. The hooks mark
            # it like the forward's. They stay pushed only to the end of this node: autograd
            # restores a node's thread-local state, saved-tensor hooks included, after it.
            torch.autograd.graph.saved_tensors_hooks(self._pack_recomputed,
                                                     self._unpack).__enter__()
        if type(saved) is SavedCast:
            self._weight_casts_redone += 1
        return saved.value()

    def _release_backward(self):
        held, self._backward_held = self._backward_held, {}
        for bids in held.values():
            self._release(bids)

    # ---- use ----
    def forward(self, *args, **kwargs):
        self._release_backward()  # the last backward pass is over
        phase = self._phase
        phase.enter_forward()
        try:
            if torch.is_grad_enabled():
                self._saved_order, self._saved_at, self._saved_ids = [], {}, {}
                with torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack):
                    out = self.model(*args, **kwargs)
            else:
                out = self.model(*args, **kwargs)
        finally:
            phase.in_forward = False
        self.manager.step()  # once per iteration
        return out

    def optimizer_step(self, optimizer):
        """optimizer.step() one buffer at a time: each is acquired for writing while the
        optimizer updates it (the others' gradients are hidden meanwhile, so it skips them).
        The result is the same as one optimizer.step() for optimizers that update each
        parameter from its own gradient and state (SGD, Adam, ...)."""
        self._release_backward()
        params = [p for group in optimizer.param_groups for p in group["params"]]
        grads = {id(p): p.grad for p in params}
        off = self._grads_off
        moved = {id(p) for p in params if off is not None and off.pending(p)}

        def show(mine):  # only `mine` have a gradient: the optimizer skips the others
            for p in params:
                p.grad = None
            for p in mine:
                p.grad = off.take(p) if id(p) in moved else grads[id(p)]

        with_grad = [p for p in params if grads[id(p)] is not None or id(p) in moved]
        bid_of = {id(p): self._by_storage.get(p.data_ptr()) for p in with_grad}
        unmanaged = [p for p in with_grad if bid_of[id(p)] is None]
        self._stepping = True
        try:
            for bid in list(self._counts):
                mine = [p for p in with_grad if bid_of[id(p)] == bid]
                if not mine:
                    continue
                show(mine)
                self._acquire([bid], write=True)
                try:
                    optimizer.step()
                finally:
                    self._release([bid])
            if unmanaged:
                show(unmanaged)
                optimizer.step()
        finally:
            self._stepping = False
            for p in params:  # a gradient moved off the device is consumed by the step
                p.grad = grads[id(p)]
            if off is not None:
                off.drop()

    def _apply(self, fn, *args, **kwargs):
        """What .to(), .half(), .cuda(), .float() and the like run: allowed only where it
        leaves every tensor TrimmedModel keeps as it is (each is probed with a small tensor of
        its dtype, device and number of dimensions: fn must return the probe itself, at the
        same address; share_memory() would move it). Otherwise it would read every tensor,
        moved ones too, and put plain copies in their place, outside the budget: refused, with
        the reason."""
        for t in self._tensor_of.values():
            probe = torch.empty((2,) * t.dim(), dtype=t.dtype, device=t.device)
            at = probe.data_ptr()
            out = fn(probe)
            if out is not probe or probe.data_ptr() != at:
                raise RuntimeError(
                    f"TrimmedModel: this would replace its {t.dtype} tensors on {t.device} with "
                    f"{out.dtype} copies on {out.device}, outside the budget. Convert or move "
                    "the model before wrapping it")
        return super()._apply(fn, *args, **kwargs)

    def zero_grad(self, *args, **kwargs):
        """nn.Module.zero_grad, and the gradients moved to the host are dropped too."""
        super().zero_grad(*args, **kwargs)
        if self._grads_off is not None:
            self._grads_off.drop()

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

    def copied_state(self):
        """A copy of every parameter and buffer by name (the wrapped model's names,
        non-persistent buffers included), each buffer acquired in turn; what TrimmedModel keeps
        is copied to host memory. For checking a model larger than the budget. To save or load
        one, state_dict() and load_state_dict() work as usual (state_dict_hooks.py)."""
        out = {}
        for name, t in list(self.model.named_parameters()) + list(self.model.named_buffers()):
            if self._by_storage.get(t.data_ptr()) is None:
                out[name] = t.detach().clone()
            else:
                out[name] = state_dict_hooks.copy_out(self, t)
        return out

    def stats(self):
        out = self.manager.stats()
        out["backward_prefetches_refused"] = self._prefetches_refused
        out["weight_casts_redone"] = self._weight_casts_redone
        if self._grads_off is not None:
            out["gradient_bytes_moved_off"] = self._grads_off.bytes_moved
            out["gradient_bytes_waiting"] = self._grads_off.pending_bytes()
        return out

    def model_bytes(self):
        return sum(t.numel() * t.element_size() for t in self._tensor_of.values())

    def remove_hooks(self):
        for h in self._handles:
            h.remove()
        self._handles.clear()
