"""Which weights a group's channels index (`slices`), how much each channel matters
(`importance`), and removing channels for real (`remove`): new, smaller tensors and the layer
attributes that describe them, so memory and compute shrink (not masks over dense weights)."""
from collections import defaultdict

import torch
from torch import nn

from .attention import PrunedSelfAttention
from .groups import PruneError


def _slices(member):
    """(owner module, attribute, dimension, offset, width per channel, is a parameter)."""
    m, role, off, rep = member.module, member.role, member.offset, member.repeat
    out = []
    if role == "out":
        out += [(m, "weight", 0, 0, 1, True)]
        if m.bias is not None:
            out += [(m, "bias", 0, 0, 1, True)]
    elif role == "in":
        out += [(m, "weight", 1, off, rep, True)]
    elif role == "norm":  # at its offset: a norm over concatenated spaces holds each in turn
        if getattr(m, "weight", None) is not None:
            out += [(m, "weight", 0, off, rep, True), (m, "bias", 0, off, rep, True)]
        if getattr(m, "running_mean", None) is not None:
            out += [(m, "running_mean", 0, off, rep, False),
                    (m, "running_var", 0, off, rep, False)]
    elif role == "depthwise":
        out += [(m, "weight", 0, 0, 1, True)]
        if m.bias is not None:
            out += [(m, "bias", 0, 0, 1, True)]
    elif role == "embed":
        out += [(m, "weight", 1, 0, 1, True)]
    elif role == "attn_in":
        out += [(m, "in_proj_weight", 1, off, rep, True)]
    elif role == "attn_out":
        out += [(m.out_proj, "weight", 0, 0, 1, True)]
        if m.out_proj.bias is not None:
            out += [(m.out_proj, "bias", 0, 0, 1, True)]
    elif role == "tensor":
        out += [(m, member.attr, member.dim, 0, 1, True)]
    elif role == "heads":
        inner = m.embed_dim
        for k in range(3):
            out += [(m, "in_proj_weight", 0, k * inner, rep, True)]
            if m.in_proj_bias is not None:
                out += [(m, "in_proj_bias", 0, k * inner, rep, True)]
        out += [(m.out_proj, "weight", 1, 0, rep, True)]
    return [s for s in out if getattr(s[0], s[1], None) is not None]


def _indices(channels, offset, width):
    return [offset + c * width + j for c in channels for j in range(width)]


def importance(group, kind):
    """One score per channel: the group's weights summed over every member (Torch-Pruning's
    group importance): `l1` |w|, `l2` w², `taylor` |w · dL/dw| (gradients must be present)."""
    score = torch.zeros(group.size, dtype=torch.float64)
    for member in group.members:
        for owner, attr, dim, off, width, is_param in _slices(member):
            if not is_param:
                continue
            t = getattr(owner, attr)
            w = t.detach()
            if kind == "taylor":
                if t.grad is None:
                    raise PruneError("importance='taylor' needs gradients: run a backward pass "
                                     "on a calibration batch before pruning (no gradient on "
                                     f"'{member.module_name}.{attr}')")
                w = w * t.grad.detach()
            part = w.narrow(dim, off, group.size * width).movedim(dim, 0)
            part = part.reshape(group.size, width, -1).double()
            score += (part.abs() if kind in ("l1", "taylor") else part.pow(2)).sum(dim=(1, 2))
    return score


def remove(model, groups):
    """Removes the channels each group does not keep (`group.keep`), in place."""
    drop = defaultdict(set)  # (owner id, attr, dim) -> indices to remove
    owners = {}
    attention = {}
    for g in groups:
        if g.keep is None or len(g.keep) == g.size:
            continue
        gone = sorted(set(range(g.size)) - set(g.keep))
        for member in g.members:
            if member.role == "norm" and isinstance(member.module, nn.LayerNorm) \
                    and member.module.weight is None:  # no tensor to slice, only its size
                member.module.normalized_shape = (len(g.keep),)
            if member.role in ("attn_in", "attn_out", "heads"):
                attention[id(member.module)] = (member.module_name, member.module)
            for owner, attr, dim, off, width, _ in _slices(member):
                key = (id(owner), attr, dim)
                owners[key] = owner
                drop[key].update(_indices(gone, off, width))
    for key, gone in drop.items():
        owner, attr, dim = owners[key], key[1], key[2]
        t = getattr(owner, attr)
        kept = torch.tensor([i for i in range(t.shape[dim]) if i not in gone], dtype=torch.long,
                            device=t.device)
        new = t.detach().index_select(dim, kept).clone()
        if isinstance(t, nn.Parameter):
            setattr(owner, attr, nn.Parameter(new, requires_grad=t.requires_grad))
        else:
            setattr(owner, attr, new)
    for owner in {id(o): o for o in owners.values()}.values():
        _describe_sizes(owner)
    for name, mha in attention.values():
        replace_submodule(model, name, PrunedSelfAttention.from_multihead(
            mha, mha.in_proj_weight, mha.in_proj_bias, mha.out_proj.weight, mha.out_proj.bias))


def _describe_sizes(m):
    """Updates a layer's size attributes to its (smaller) tensors."""
    if isinstance(m, nn.modules.conv._ConvNd):
        m.out_channels = m.weight.shape[0]
        if m.groups > 1:  # depthwise: channels in = out = groups
            m.groups = m.in_channels = m.out_channels
        else:
            m.in_channels = m.weight.shape[1]
    elif isinstance(m, nn.Linear):
        m.out_features, m.in_features = m.weight.shape
    elif isinstance(m, nn.modules.batchnorm._BatchNorm):
        m.num_features = (m.weight if m.weight is not None else m.running_mean).shape[0]
    elif isinstance(m, nn.LayerNorm):
        m.normalized_shape = (m.weight.shape[0],)
    elif isinstance(m, nn.Embedding):
        m.embedding_dim = m.weight.shape[1]


def replace_submodule(model, name, new):
    """Puts `new` where the submodule called `name` is."""
    parent_name, _, attr = name.rpartition(".")
    parent = model.get_submodule(parent_name) if parent_name else model
    setattr(parent, attr, new)
