"""The article's "zero-code" forms: a class decorator and a context manager."""
import functools
from contextlib import contextmanager

from torch import nn

from .groups import PruneError
from .prune import prune, report


def channelwise(ratio=0.4, importance="l1", ignore=(), calibration_calls=0, round_to=1):
    """Decorator for an nn.Module class, or for its `forward`: each instance prunes itself at
    the first forward call after `calibration_calls` calls (0: the first call), traced on that
    call's inputs; the call itself runs on the pruned model.

        @seedance_prune.channelwise(ratio=0.4)
        class Net(nn.Module): ...

        class Net(nn.Module):
            @seedance_prune.channelwise(ratio=0.4)
            def forward(self, x): ...

    With importance="taylor", run a backward pass in each calibration call's step: the
    gradients present at pruning time rank the channels."""

    def wrap(forward):
        @functools.wraps(forward)
        def pruned_forward(self, *args, **kwargs):
            if not isinstance(self, nn.Module):
                raise PruneError("channelwise wraps the forward of an nn.Module")
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

        return pruned_forward

    def decorate(target):
        if isinstance(target, type) and issubclass(target, nn.Module):
            target.forward = wrap(target.forward)
            return target
        if callable(target) and not isinstance(target, type) and \
                getattr(target, "__name__", "") == "forward":
            return wrap(target)
        raise PruneError(f"channelwise decorates an nn.Module class or its forward, not "
                         f"{target!r}")

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
