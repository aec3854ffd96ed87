"""Weights under autocast (mixed precision) in a TrimmedModel: their low-precision copies.

torch.autocast casts each fp32 weight to fp16/bf16 where an op runs in low precision, and
keeps the copy in its cache until the autocast region ends. In training, autograd also saves
the copy (or a view of it, such as the transpose linear uses) for the backward pass. Either
way, copies of the whole model's weights would stay on the device, outside the budget. So:
- the forward hook of each unit clears autocast's cache when autocast is on (the next unit
  that uses a weight casts it again);
- a saved copy of a weight TrimmedModel keeps is not kept: the backward pass brings the weight
  back and casts it again (SavedCast). The cast is deterministic, so the values are the same
  bits.
"""
import functools

import torch

LOW_PRECISION = (torch.float16, torch.bfloat16)


def autocast_check(device):
    """A function that says whether autocast is on for `device` ("cpu" or a CUDA device)."""
    kind = "cpu" if device == "cpu" else "cuda"
    try:
        torch.is_autocast_enabled(kind)  # torch >= 2.4 (is_autocast_cpu_enabled deprecated)
        return functools.partial(torch.is_autocast_enabled, kind)
    except TypeError:  # older: one function per device type, CUDA's without an argument
        return torch.is_autocast_cpu_enabled if kind == "cpu" else torch.is_autocast_enabled


def cast_weight(t, by_storage):
    """(buffer id, weight) when `t` is a cast of a weight TrimmedModel keeps (or a view of
    one); None otherwise."""
    base = t._base if t._base is not None else t
    fn = base.grad_fn
    if fn is None or type(fn).__name__ != "ToCopyBackward0":
        return None
    source = fn.next_functions[0][0]
    weight = getattr(source, "variable", None)  # an AccumulateGrad node: a leaf
    # Only a cast, in place, to another dtype with the same layout: what casting the weight
    # again reproduces (not a copy to another device or memory format).
    if weight is None or weight.dtype == base.dtype or weight.device != base.device or \
            weight.size() != base.size() or weight.stride() != base.stride():
        return None
    bid = by_storage.get(weight.data_ptr())
    return None if bid is None else (bid, weight)


class SavedCast:
    """A low-precision copy of a weight that autograd saved, kept as how to make it again:
    the cast, then the view autograd saved (size, strides, offset in the copy)."""

    __slots__ = ("bid", "weight", "dtype", "view")

    def __init__(self, bid, weight, t):
        self.bid = bid
        self.weight = weight
        self.dtype = t.dtype
        base = t._base
        self.view = None if base is None else (
            t.size(), t.stride(), t.storage_offset() - base.storage_offset())

    def value(self):
        copy = self.weight.detach().to(self.dtype)
        return copy if self.view is None else copy.as_strided(*self.view)
