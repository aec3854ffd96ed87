"""The article's "zero-code" forms: a class decorator and a context manager."""
import functools
from contextlib import contextmanager

from torch import nn

from .groups import PruneError
from .prune import prune, report


def channelwise(ratio=0.4, importance="l1", ignore=(), calibration_calls=0, round_to=1):
    """Class decorator: instances of the decorated nn.Module prune themselves at the first
    forward call after `calibration_calls` calls (0: the first call), traced on that call's
    inputs; the call itself runs on the pruned model.

        @seedance_prune.channelwise(ratio=0.4)
        class Net(nn.Module): ...

    With importance="taylor", run a backward pass in each calibration call's step: the
    gradients present at pruning time rank the channels."""

    def decorate(cls):
        if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
            raise PruneError(f"channelwise decorates an nn.Module class, not {cls!r}")
        forward = cls.forward

        @functools.wraps(forward)
        def pruned_forward(self, *args, **kwargs):
            state = self.__dict__.setdefault("_seedance_prune_state",
                                             {"calls": 0, "tracing": False})
            if not state["tracing"] and report(self) is None:
                if state["calls"] >= calibration_calls:
                    state["tracing"] = True
                    try:
                        prune(self, args, ratio=ratio, importance=importance, ignore=ignore,
                              round_to=round_to)
                    finally:
                        state["tracing"] = False
                else:
                    state["calls"] += 1
            return forward(self, *args, **kwargs)

        cls.forward = pruned_forward
        return cls

    return decorate


class _Session:
    report = None


@contextmanager
def pruning(model, ratio=0.4, importance="l1", ignore=(), round_to=1):
    """Context form: the block is the calibration (its first forward call's inputs trace the
    model; with importance="taylor", its backward passes give the gradients); the model is
    pruned when the block ends without an exception.

        with seedance_prune.pruning(model, ratio=0.4, importance="taylor") as session:
            loss_fn(model(x), y).backward()
        print(session.report.summary())"""
    seen = {}
    handle = model.register_forward_pre_hook(lambda m, inputs: seen.setdefault("inputs", inputs))
    session = _Session()
    try:
        yield session
    finally:
        handle.remove()
    if "inputs" not in seen:
        raise PruneError("pruning(): the model was not called inside the block, so there is "
                         "nothing to trace it with")
    prune(model, seen["inputs"], ratio=ratio, importance=importance, ignore=ignore,
          round_to=round_to)
    session.report = report(model)
