"""The baselines weight streaming is measured against in bench/trim_stream.py: a plain
one-unit-ahead prefetcher (a copy thread on the CPU, a copy stream on CUDA), and HF accelerate's
dispatch_model with the same budget as max_memory (on a machine where accelerate is installed).
Both prefetchers reuse StreamedModel's units, pinned blocks and recording forward; nothing else
of it: every unit is streamed, into the other of two slots the size of the largest unit. What
their hooks update per unit lives in a plain namespace (`_st`), not on the module, where each
assignment would cost a Module.__setattr__."""
import concurrent.futures
import types

import torch

from seedance_trim.streaming import StreamedModel


class _Counted:
    """What both prefetchers report: their two slots' bytes, and the bytes copied and host
    waits since reset_counts()."""

    def device_bytes(self):
        return sum(s.numel() for s in self._slots)

    @property
    def copied(self):
        return self._st.copied

    @property
    def waits(self):
        return self._st.waits

    def reset_counts(self):
        self._st.copied = self._st.waits = 0


class OneAheadPrefetcher(_Counted, StreamedModel):
    """CPU: the next unit is copied on a thread while the current one computes."""

    def __init__(self, model):
        super().__init__(model, budget_bytes=1, device="cpu")
        largest = max(u.nbytes for u in self._units)
        self._slots = [torch.empty(largest, dtype=torch.uint8) for _ in range(2)]
        self._pool = concurrent.futures.ThreadPoolExecutor(1)
        self._pending = {}  # position -> (slot, future)
        self._st = types.SimpleNamespace(last_slot=1, waits=0, copied=0)

    def _plan_from_recording(self):  # no library plan: the order is all it needs
        self._backend.finish_recording(self._order)
        self._position = {u.index: i for i, u in enumerate(self._order)}

    def _copy(self, position, slot):
        u = self._order[position]
        self._slots[slot][:u.nbytes].copy_(u.block[:u.nbytes])
        self._st.copied += u.nbytes

    def _before(self, u):
        if self._mode != "stream":
            return super()._before(u)
        i = self._position[u.index]
        # Its copy, started when the unit before it began (or now, the first time).
        slot, future = self._pending.pop(i, (None, None))
        if future is None:
            slot = 1 - self._st.last_slot
            future = self._pool.submit(self._copy, i, slot)
        if not future.done():
            self._st.waits += 1
        future.result()
        self._st.last_slot = slot
        self._point(u, u.views(self._slots[slot]))
        # The other slot held the unit before this one, which has ended.
        following = (i + 1) % len(self._order)
        self._pending[following] = (1 - slot,
                                    self._pool.submit(self._copy, following, 1 - slot))

    def _after(self, u):
        if self._mode != "stream":
            return super()._after(u)
        self._point(u, u.home)


class CudaOneAheadPrefetcher(_Counted, StreamedModel):
    """CUDA: the next unit is copied on a copy stream while the current one computes; the
    compute stream waits for it on the device, and a slot is overwritten only after the
    compute that read it (events, no host waits)."""

    def __init__(self, model, device):
        super().__init__(model, budget_bytes=1, device=device)
        largest = max(u.nbytes for u in self._units)
        self._slots = [torch.empty(largest, dtype=torch.uint8, device=self.device)
                       for _ in range(2)]
        self._copy_stream = torch.cuda.Stream(self.device)
        self._ready = [torch.cuda.Event(), torch.cuda.Event()]
        self._free = [torch.cuda.Event(), torch.cuda.Event()]
        self._slot_of = {}  # position -> the slot its copy went to
        self._st = types.SimpleNamespace(next_slot=0, current=0, waits=0, copied=0)

    def _plan_from_recording(self):
        self._backend.finish_recording(self._order)
        self._position = {u.index: i for i, u in enumerate(self._order)}

    def _issue(self, position):
        st = self._st
        slot, st.next_slot = st.next_slot, 1 - st.next_slot
        u = self._order[position]
        with torch.cuda.stream(self._copy_stream):
            self._copy_stream.wait_event(self._free[slot])
            self._slots[slot][:u.nbytes].copy_(u.block[:u.nbytes], non_blocking=True)
            self._ready[slot].record(self._copy_stream)
        self._slot_of[position] = slot
        st.copied += u.nbytes

    def _before(self, u):
        if self._mode != "stream":
            return super()._before(u)
        i = self._position[u.index]
        if i not in self._slot_of:  # the very first unit
            self._issue(i)
        slot = self._slot_of.pop(i)
        torch.cuda.current_stream(self.device).wait_event(self._ready[slot])
        self._point(u, u.views(self._slots[slot]))
        self._st.current = slot
        self._issue((i + 1) % len(self._order))  # the other slot: its unit has ended

    def _after(self, u):
        if self._mode != "stream":
            return super()._after(u)
        self._free[self._st.current].record(torch.cuda.current_stream(self.device))
        self._point(u, u.home)


def accelerate_dispatch(model, budget, device, no_split=()):
    """accelerate's dispatch_model with max_memory = {device: budget, cpu: the rest}: the
    modules that do not fit stay in CPU memory and are copied to the device at each forward
    (its offload hooks). Returns (model, bytes on the device, bytes offloaded), or raises
    ImportError where accelerate is not installed."""
    from accelerate import dispatch_model, infer_auto_device_map  # ImportError: not installed
    index = torch.device(device).index or 0
    device_map = infer_auto_device_map(model, max_memory={index: budget, "cpu": 1 << 44},
                                       no_split_module_classes=list(no_split))
    on_device = offloaded = 0
    for name, where in device_map.items():
        sub = model.get_submodule(name) if name else model
        n = sum(t.numel() * t.element_size()
                for t in list(sub.parameters()) + list(sub.buffers()))
        if where in ("cpu", "disk"):
            offloaded += n
        else:
            on_device += n
    return dispatch_model(model, device_map=device_map, main_device=index), on_device, offloaded
