"""prune(): dependency-graph structured pruning that makes layers smaller."""
import warnings
from dataclasses import dataclass, field

import torch

from .groups import PruneError
from .slicing import importance as group_importance
from .slicing import remove
from .trace import find_groups

IMPORTANCE = ("l1", "l2", "taylor")


@dataclass
class PruneReport:
    ratio: float
    importance: str
    params_before: int
    params_after: int
    groups: list = field(default_factory=list)  # every group found, pruned or frozen
    notes: list = field(default_factory=list)   # why channels were kept, once per cause

    @property
    def pruned(self):
        return [g for g in self.groups if g.keep is not None and len(g.keep) < g.size]

    @property
    def frozen(self):
        return [g for g in self.groups if g.frozen]

    def summary(self):
        lines = [f"pruned {len(self.pruned)} of {len(self.groups)} channel groups at ratio "
                 f"{self.ratio} ({self.importance}): {self.params_before:,} -> "
                 f"{self.params_after:,} parameters"]
        lines += [f"  kept: {g.describe()} ({g.frozen[0]})" for g in self.frozen]
        return "\n".join(lines)


def count_parameters(model):
    return sum(p.numel() for p in model.parameters())


def keep_count(size, ratio, round_to=1):
    """Channels kept of `size` when the fraction `ratio` is removed (at least one; rounded up
    to a multiple of `round_to` where the group is that large)."""
    keep = max(1, size - int(round(size * ratio)))
    if round_to > 1 and size >= round_to:
        keep = min(size, -(-keep // round_to) * round_to)
    return keep


def prune(model, example_inputs, ratio=0.4, importance="l1", ignore=(), round_to=1,
          tracer="auto"):
    """Removes the fraction `ratio` of every prunable channel group of `model`, in place, and
    returns the model (its report: `report(model)`).

    Groups are found by tracing `model` on `example_inputs` (`tracer`: torch.fx where the
    model traces, else the autograd graph of one run; "fx" or "autograd" to choose): a convolution's
    output channels, its BatchNorm, the next layer's input channels, residual additions and
    concatenations, attention heads, MLP units. Channels that reach the model's output, or an
    operation the tracer cannot follow, or a layer in `ignore` (modules or their names), are
    kept. Channels are ranked by `importance` ("l1", "l2", or "taylor", which needs gradients
    from a backward pass) summed over the whole group, and the least important are removed
    from every weight of the group. Create optimizers after pruning: parameters are new tensors.
    """
    if not 0.0 <= float(ratio) < 1.0:
        raise PruneError(f"ratio is the fraction of channels removed: 0 <= ratio < 1, not {ratio}")
    if importance not in IMPORTANCE:
        raise PruneError(f"importance must be one of {', '.join(IMPORTANCE)}, not {importance!r}")
    if round_to < 1:
        raise PruneError(f"round_to must be at least 1, not {round_to}")
    before = count_parameters(model)
    groups, notes = find_groups(model, example_inputs, ignore, tracer)
    for g in groups:
        if g.frozen or ratio == 0:
            continue
        keep = keep_count(g.size, ratio, round_to)
        if keep == g.size:
            continue
        scores = group_importance(g, importance)
        g.keep = sorted(torch.argsort(scores, descending=True)[:keep].tolist())
    with torch.no_grad():
        remove(model, groups)
    _check_runs(model, example_inputs)
    unknown = [n for n in notes if "not followed by the tracer" in n]
    if unknown:
        warnings.warn("seedance_prune kept channels it could not follow: " + "; ".join(unknown))
    model._seedance_prune_report = PruneReport(float(ratio), importance, before,
                                               count_parameters(model), groups, notes)
    return model


def _check_runs(model, example_inputs):
    """One forward pass of the pruned model: a graph that missed a coupling fails loudly here
    (shapes that no longer fit), not later in the caller's code."""
    inputs = example_inputs if isinstance(example_inputs, (tuple, list)) else (example_inputs,)
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            model(*inputs)
    except RuntimeError as e:
        raise PruneError(f"the pruned {type(model).__name__} no longer runs on the example "
                         f"inputs ({str(e).splitlines()[0]}): a coupling the tracer did not see; "
                         "prune a copy, and pass the layers involved in ignore=[...]") from e
    finally:
        model.train(was_training)


def report(model):
    """The PruneReport of the last prune() of `model` (None if it was never pruned)."""
    return getattr(model, "_seedance_prune_report", None)
