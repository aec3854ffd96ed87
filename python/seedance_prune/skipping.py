"""Block skipping decided before the block runs (the article's 2.2, done as BlockDrop does it):
a residual block whose output has its input's shape can be skipped per sample (its output is
then its input). The decision is made from the block's *input*, by a small gate calibrated
offline on held-out data; output sparsity after the block ran, gradient norms (none at
inference) and per-operator cache statistics (not readable at run time) cannot decide it.

    blocks = skippable(model, ["blocks.0", "blocks.1", ...])   # wraps them in place
    calibrate(model, blocks, x_held_out, y_held_out, skip_fraction=0.2)
    model.eval(); model(x)                                      # skips where the gate says
    print(skip_stats(blocks))

The gate of a block is a linear regression from the block's pooled input (mean over every
dimension but the channels) to the harm of skipping it for that sample (the increase in the
model's loss when only this block is skipped), fitted by least squares on the calibration
data. The block skips a sample when the predicted harm is below a threshold: the
`skip_fraction` quantile of the predictions on the calibration data. A per-block budget caps
the skips: at most `budget` of the samples it has seen (running count, so batch 1 obeys it).

Eval mode only: in training mode every block runs (the gate is not trained with the model),
except that `train_drop` > 0 trains the model with stochastic depth (each block skipped per
sample at that rate), which makes it far more tolerant of skips at inference.
"""
import math

import torch
import torch.nn.functional as F
from torch import nn

from .slicing import replace_submodule


class SkipError(ValueError):
    pass


class Skippable(nn.Module):
    """Wraps `block` (output shaped like its input); mode: "gate" (calibrated), "random"
    (the control: skips each sample with probability `rate`), "never", or "always"."""

    def __init__(self, block, name=""):
        super().__init__()
        self.block = block
        self.name = name
        self.mode = "never"
        self.rate = 0.0
        self.budget = 1.0
        self.register_buffer("gate_weight", torch.zeros(0))
        self.register_buffer("gate_bias", torch.zeros(()))
        self.threshold = -math.inf
        self.generator = torch.Generator().manual_seed(0)
        self.seen = 0
        self.skipped = 0
        self.train_drop = 0.0  # stochastic depth: skip rate per sample in training mode

    def features(self, x):
        dims = [d for d in range(x.dim()) if d not in (0, self.channel_dim(x))]
        return x.mean(dim=dims) if dims else x

    @staticmethod
    def channel_dim(x):
        return 1 if x.dim() == 4 else x.dim() - 1  # N,C,H,W images; N,...,C tokens

    def predicted_harm(self, x):
        return self.features(x).float() @ self.gate_weight + self.gate_bias

    def wants_skip(self, x):
        n = x.shape[0]
        if self.mode == "always":
            return torch.ones(n, dtype=torch.bool, device=x.device), None
        if self.mode == "random":
            draw = torch.rand(n, generator=self.generator) < self.rate
            return draw.to(x.device), None
        if self.mode == "gate":
            harm = self.predicted_harm(x)
            return harm < self.threshold, harm
        return torch.zeros(n, dtype=torch.bool, device=x.device), None

    def forward(self, x):
        if self.training:
            if self.train_drop > 0:  # stochastic depth (Huang et al. 2016): robust to skips
                keep = (torch.rand(x.shape[0], device=x.device) >= self.train_drop)
                keep = keep.view(-1, *([1] * (x.dim() - 1))).to(x.dtype)
                return keep * self.block(x) + (1 - keep) * x
            return self.block(x)
        if self.mode == "never":
            self.seen += x.shape[0]
            return self.block(x)
        skip, harm = self.wants_skip(x)
        allowed = max(0, math.floor(self.budget * (self.seen + x.shape[0]) + 1e-9) - self.skipped)
        if int(skip.sum()) > allowed:  # over budget: skip only the least harmful
            order = torch.argsort(harm if harm is not None else torch.rand(
                x.shape[0], generator=self.generator).to(x.device))
            chosen = order[skip[order]][:allowed]
            skip = torch.zeros_like(skip)
            skip[chosen] = True
        self.seen += x.shape[0]
        count = int(skip.sum())
        self.skipped += count
        if count == x.shape[0]:
            return x
        if count == 0:
            return self.block(x)
        out = x.clone()
        run = ~skip
        out[run] = self.block(x[run])
        return out


def skippable(model, names):
    """Wraps the named submodules of `model` in Skippable (in place); returns them in order."""
    wrapped = []
    for name in names:
        block = model.get_submodule(name)
        if not isinstance(block, Skippable):
            new = Skippable(block, name).to(next(block.parameters(), torch.zeros(())).device)
            new.train(block.training)
            replace_submodule(model, name, new)
            block = new
        wrapped.append(block)
    return wrapped


def set_mode(blocks, mode, rate=0.0, budget=1.0, seed=0):
    for i, b in enumerate(blocks):
        b.mode, b.rate, b.budget = mode, rate, budget
        b.generator.manual_seed(seed + i)
        b.seen = b.skipped = 0


def skip_stats(blocks):
    """Fraction of block executions skipped, per block and overall."""
    seen = sum(b.seen for b in blocks)
    return {"per_block": {b.name: round(b.skipped / b.seen, 4) if b.seen else None
                          for b in blocks},
            "skipped": round(sum(b.skipped for b in blocks) / seen, 4) if seen else None}


@torch.no_grad()
def calibrate(model, blocks, x, y, skip_fraction=0.2, budget=None, batch=256):
    """Fits each block's gate on held-out (x, y) and sets its threshold so that it skips
    `skip_fraction` of those samples; `budget` (default: skip_fraction) caps the skips.
    Blocks are calibrated in order, each with the gates before it already active, so each sees
    the inputs it will see at run time."""
    if not 0.0 <= skip_fraction < 1.0:
        raise SkipError(f"skip_fraction must be in [0, 1), not {skip_fraction}")
    budget = skip_fraction if budget is None else budget
    model.eval()
    set_mode(blocks, "never")

    def losses():
        out = [F.cross_entropy(model(x[i:i + batch]), y[i:i + batch].to(x.device),
                               reduction="none") for i in range(0, len(y), batch)]
        return torch.cat(out).float()

    done = []
    for b in blocks:
        feats = []
        hook = b.register_forward_pre_hook(lambda m, i: feats.append(m.features(i[0]).float()))
        set_mode(done, "gate", budget=budget)
        try:
            base = losses()
        finally:
            hook.remove()
        set_mode(done, "gate", budget=budget)
        b.mode = "always"
        harm = losses() - base
        b.mode = "never"
        feats = torch.cat(feats)
        design = torch.cat([feats, torch.ones(len(feats), 1, device=feats.device)], dim=1)
        solution = torch.linalg.lstsq(design.cpu(), harm.cpu().unsqueeze(1)).solution.squeeze(1)
        b.gate_weight = solution[:-1].to(feats.device)
        b.gate_bias = solution[-1].to(feats.device)
        predicted = design @ solution.to(feats.device)
        b.threshold = (torch.quantile(predicted, skip_fraction).item() if skip_fraction > 0
                       else -math.inf)
        done.append(b)
    set_mode(blocks, "gate", budget=budget)
    return blocks
