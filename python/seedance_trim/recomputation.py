"""Activation checkpointing inside a TrimmedModel: which recomputation is running.

torch.utils.checkpoint(use_reentrant=True) (checkpoint_sequential, and Hugging Face's
gradient_checkpointing_enable() by default) runs a segment again inside its backward node,
CheckpointFunction.backward, with no saved-tensor hooks of its own. TrimmedModel pushes its
hooks around each unit run there, so the weights the recomputation saves are marked and come
back one unit at a time, as in a plain backward pass.

use_reentrant=False recomputes under checkpoint's own saved-tensor hooks, which count every
tensor the segment saves and keep each one until it is used. Hooks of TrimmedModel's pushed
inside would hide tensors from that count, and without them the weights are kept by reference
only, at memory TrimmedModel may move. So it is refused, with the reason.
"""
import sys

import torch.utils.checkpoint as _checkpoint

_REENTRANT = _checkpoint.CheckpointFunction.backward.__code__
_CHECKPOINT_FILE = _REENTRANT.co_filename
# The functions that run a non-reentrant recomputation: torch 1.13's `unpack`, torch 2.x's
# `unpack_hook` (which calls `recompute_fn`). A later torch that renames them would get
# TrimmedModel's hooks pushed inside its recomputation; torch 2.x then fails its own check
# (a different number of tensors saved than in the forward) instead of computing wrong.
_NON_REENTRANT = frozenset(("unpack", "unpack_hook", "recompute_fn"))

NON_REENTRANT_REFUSED = (
    "TrimmedModel: torch.utils.checkpoint with use_reentrant=False is not supported: its "
    "recomputation keeps the weights it saves by reference, at memory TrimmedModel moves "
    "under the budget. Pass use_reentrant=True (the weights then come back one unit at a "
    "time, as in a plain backward pass), or use activations=\"cpu\" instead of checkpointing")


def refuse_non_reentrant():
    """Raises RuntimeError if the caller runs inside a non-reentrant checkpoint's
    recomputation; returns if it runs inside a reentrant one's, or in neither (a unit called
    with grad enabled outside the model's forward)."""
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if code is _REENTRANT:
            return
        if code.co_name in _NON_REENTRANT and code.co_filename == _CHECKPOINT_FILE:
            raise RuntimeError(NON_REENTRANT_REFUSED)
        frame = frame.f_back


class RunPhase:
    """Where a TrimmedModel's units run: in its forward(), or outside it with hooks a unit
    pushed itself (a recomputation). Plain attributes, set on every unpack."""

    __slots__ = ("in_forward", "unit", "hooks", "new_segment")

    def __init__(self):
        self.in_forward = False
        self.unit = None  # the outermost unit running under the hooks it pushed
        self.hooks = None
        self.new_segment = True  # the next recomputation starts a new segment

    def enter_forward(self):
        # A unit set here raised in the last backward pass. Its hooks are gone: autograd
        # restores a node's thread-local state, saved-tensor hooks included, after the node.
        self.unit = self.hooks = None
        self.new_segment = True
        self.in_forward = True

    def begin(self, unit, hooks):
        hooks.__enter__()
        self.unit, self.hooks = unit, hooks

    def end(self):
        hooks, self.unit, self.hooks = self.hooks, None, None
        hooks.__exit__(None, None, None)
