"""Activation sparsity for MLPs, TEAL-style: each chosen linear layer zeroes the input entries
whose magnitude is below a per-layer threshold, calibrated offline so that a target fraction
of entries is zero; a matrix-vector product then reads only the weight rows of the entries that
remain (the bytes batch-1 decoding is bound by).

    layers = sparsify(model, ["mlp.0", "mlp.2"])          # wraps them in place
    calibrate_thresholds(model, layers, x_held_out, sparsity=0.4)
    model.eval(); model(x)

`SparseLinear` computes "dense" (the masked input through the full weight, the definition),
"gather" (the CPU reference of the skipping kernel: the weight kept transposed, only the rows of
non-zero entries read) or "kernel" (sparse_gemv.py, Triton, on CUDA at batch 1; elsewhere the
gather reference). All agree to float rounding (tested; the kernel on the GPU machine).
"""
import torch
import torch.nn.functional as F
from torch import nn

from . import sparse_gemv
from .slicing import replace_submodule


class SparseLinear(nn.Module):
    def __init__(self, linear, name=""):
        super().__init__()
        self.linear = linear
        self.name = name
        self.threshold = None  # None: off (the plain layer)
        self.mode = "dense"
        self._weight_t = None  # (weight's storage, version, W^T): remade when the weight changes
        # Zero entries counted on the input's device (no host sync per call), read by sparsity().
        self._zeros = None
        self.entries = 0

    @property
    def zeros(self):
        return int(self._zeros) if self._zeros is not None else 0

    def reset_counts(self):
        self._zeros = None
        self.entries = 0

    def sparsify(self, x):
        keep = x.abs() > self.threshold
        dropped = (~keep).sum()
        self._zeros = dropped if self._zeros is None else self._zeros + dropped
        self.entries += keep.numel()
        return x * keep, keep

    def forward(self, x):
        if self.threshold is None:
            return self.linear(x)
        xs, keep = self.sparsify(x)
        if self.mode == "dense" or self.training:
            return F.linear(xs, self.linear.weight, self.linear.bias)
        if self.mode == "kernel" and xs.numel() == xs.shape[-1] and \
                sparse_gemv.available(xs.device)[0]:
            y = sparse_gemv.sparse_gemv(xs.reshape(-1), self.weight_t())
            if self.linear.bias is not None:
                y = y + self.linear.bias
            return y.to(xs.dtype).reshape(*xs.shape[:-1], -1)
        return self.gather(xs, keep)

    def weight_t(self):
        w = self.linear.weight
        key = (w.data_ptr(), w._version)
        if self._weight_t is None or self._weight_t[0] != key:
            self._weight_t = (key, w.detach().t().contiguous())
        return self._weight_t[1]

    def gather(self, xs, keep):
        """Row by row: y = x[nz] @ W^T[nz] + b, reading only the weight rows of non-zeros."""
        flat_x, flat_keep = xs.reshape(-1, xs.shape[-1]), keep.reshape(-1, keep.shape[-1])
        weight_t = self.weight_t()
        out = []
        for row, k in zip(flat_x, flat_keep):
            nz = k.nonzero().squeeze(1)
            y = row.index_select(0, nz) @ weight_t.index_select(0, nz)
            out.append(y + self.linear.bias if self.linear.bias is not None else y)
        return torch.stack(out).reshape(*xs.shape[:-1], -1)

    def sparsity(self):
        return self.zeros / self.entries if self.entries else None


def sparsify(model, names):
    """Wraps the named nn.Linear layers of `model` in SparseLinear (in place)."""
    wrapped = []
    for name in names:
        layer = model.get_submodule(name)
        if not isinstance(layer, SparseLinear):
            if not isinstance(layer, nn.Linear):
                raise TypeError(f"'{name}' is {type(layer).__name__}, not nn.Linear")
            layer = SparseLinear(layer, name)
            replace_submodule(model, name, layer)
        wrapped.append(layer)
    return wrapped


@torch.no_grad()
def calibrate_thresholds(model, layers, x, sparsity=0.4, batch=256, max_samples=1 << 20):
    """Sets each layer's threshold to the `sparsity` quantile of |input| on held-out `x`
    (at most `max_samples` entries per layer, drawn evenly)."""
    if not 0.0 <= sparsity < 1.0:
        raise ValueError(f"sparsity must be in [0, 1), not {sparsity}")
    seen = {layer: [] for layer in layers}
    hooks = [layer.register_forward_pre_hook(
        lambda m, i: seen[m].append(i[0].detach().abs().flatten().float())) for layer in layers]
    for layer in layers:
        layer.threshold = None
    model.eval()
    try:
        for i in range(0, len(x), batch):
            model(x[i:i + batch])
    finally:
        for h in hooks:
            h.remove()
    for layer in layers:
        values = torch.cat(seen[layer])
        if len(values) > max_samples:
            values = values[torch.linspace(0, len(values) - 1, max_samples).long()]
        layer.threshold = torch.quantile(values, sparsity).item() if sparsity > 0 else None
        layer.reset_counts()
    return layers
