"""Finds a model's channel groups by tracing it with torch.fx.

Every tensor in the traced graph is followed with the channels it carries (`Channels`): a
layer's output starts a new space, operations that keep channels pass them on, and operations
that combine tensors element by element (a residual addition) join their spaces. Anything the
tracer cannot follow is safe by construction: the spaces reaching it are *frozen* (never
pruned) with the reason recorded, so a model is pruned less, never wrongly. A layer with
weights that is not understood is refused with its name, unless the caller ignores it.
"""
import math
import operator
import re

import torch
import torch.fx
import torch.nn.functional as F
from torch import nn
from torch.fx.passes.shape_prop import ShapeProp

from .groups import Channels, Group, Member, PruneError, Spaces


def _types(*names, module=nn):
    return tuple(getattr(module, n) for n in names if hasattr(module, n))


# Layers and functions that keep every channel where it is.
_KEEP_MODULES = _types(
    "ReLU", "ReLU6", "GELU", "SiLU", "Hardswish", "Hardsigmoid", "Sigmoid", "Tanh", "LeakyReLU",
    "ELU", "Mish", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
    "Identity", "MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d",
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "Hardtanh", "Softplus")
_KEEP_FUNCTIONS = {
    torch.relu, torch.relu_, torch.sigmoid, torch.tanh, torch.clamp, torch.clip, F.relu, F.relu6,
    F.gelu, F.silu, F.hardswish, F.hardsigmoid, F.hardtanh, F.leaky_relu, F.elu, F.dropout,
    F.dropout2d, F.adaptive_avg_pool1d, F.adaptive_avg_pool2d, F.adaptive_max_pool2d,
    F.max_pool1d, F.max_pool2d, F.avg_pool1d, F.avg_pool2d, torch.sigmoid, F.softplus,
}
_KEEP_METHODS = {
    "relu", "relu_", "sigmoid", "sigmoid_", "tanh", "tanh_", "clamp", "clamp_", "clamp_min",
    "contiguous", "clone", "float", "half", "bfloat16", "to", "type_as", "detach", "abs",
}
# Of those, the ones that pool over the dimensions after the channels (N, C, ...): they keep
# channels only where the channels are on dimension 1.
_POOL_MODULES = tuple(m for m in _KEEP_MODULES if "Pool" in m.__name__)
_POOL_FUNCTIONS = {f for f in _KEEP_FUNCTIONS if "pool" in getattr(f, "__name__", "")}
_ELEMENTWISE_FUNCTIONS = {
    operator.add, operator.iadd, operator.sub, operator.isub, operator.mul, operator.imul,
    operator.truediv, torch.add, torch.sub, torch.mul, torch.div, torch.maximum, torch.minimum,
}
_ELEMENTWISE_METHODS = {"add", "add_", "sub", "sub_", "mul", "mul_", "div", "div_"}
_REDUCE = {"mean", "sum", "amax", "amin"}


def _shape(node):
    meta = node.meta.get("tensor_meta") if isinstance(node, torch.fx.Node) else None
    return tuple(meta.shape) if meta is not None and hasattr(meta, "shape") else None


def _is_self_attention(mod):
    return isinstance(mod, nn.MultiheadAttention)


class _Tracer:
    def __init__(self, model, ignore_names):
        self.model = model
        self.modules = dict(model.named_modules())
        self.ignore = ignore_names
        self.spaces = Spaces()
        self.values = {}
        self.called = set()
        self.notes = []  # why spaces were frozen, once per cause

    # --- bookkeeping -------------------------------------------------------------------------
    def val(self, arg):
        return self.values.get(arg) if isinstance(arg, torch.fx.Node) else None

    def freeze(self, chans, reason):
        for c in (chans if isinstance(chans, (list, tuple)) else [chans]):
            if isinstance(c, Channels):
                for sid in c.space_ids():
                    self.spaces.freeze(sid, reason)
        if reason not in self.notes:
            self.notes.append(reason)

    def size_of(self, segments):
        return sum(rep if sid is None else self.spaces.get(sid).size * rep for sid, rep in segments)

    def consume(self, chans, name, mod, dim, role="in"):
        if chans is None:
            return
        if chans.dim != dim:
            raise PruneError(f"layer '{name}' ({type(mod).__name__}) reads its input's channels "
                             f"on dimension {dim}, but they arrive on dimension {chans.dim}")
        offset = 0
        for sid, rep in chans.segments:
            if sid is not None:
                self.spaces.add_member(sid, Member(name, mod, role, offset, rep))
                offset += self.spaces.get(sid).size * rep
            else:
                offset += rep

    def produce(self, size, dim, name, mod, role="out"):
        return Channels(dim, ((self.spaces.new(size, Member(name, mod, role)), 1),))

    def join(self, chans, where):
        """Joins tensors combined element by element; returns their shared Channels."""
        first = chans[0]
        for other in chans[1:]:
            if len(other.segments) != len(first.segments) or any(
                    (a is None) != (b is None) or ra != rb
                    for (a, ra), (b, rb) in zip(first.segments, other.segments)):
                self.freeze(chans, f"{where}: combines tensors whose channels are laid out "
                                   "differently")
                return first
            for (a, _), (b, _) in zip(first.segments, other.segments):
                if a is not None:
                    self.spaces.union(a, b, where)
        return first

    # --- the walk ----------------------------------------------------------------------------
    def run(self, gm):
        self.attr_uses = {}
        for node in gm.graph.nodes:
            if node.op == "get_attr":
                self.attr_uses[node.target] = self.attr_uses.get(node.target, 0) + len(node.users)
        for node in gm.graph.nodes:
            if node.op == "call_module":
                self.values[node] = self.call_module(node)
            elif node.op in ("call_function", "call_method"):
                self.values[node] = self.call_function(node)
            elif node.op == "output":
                self.freeze(self.flat_values(node.args), "reaches the model's output")
            # placeholders and get_attr carry no channels of a space

    def flat_values(self, args):
        out = []
        for a in (args.values() if isinstance(args, dict) else args):
            if isinstance(a, (list, tuple, dict)):
                out += self.flat_values(a)
            else:
                v = self.val(a)
                if isinstance(v, list):
                    out += [x for x in v if x is not None]
                elif v is not None:
                    out.append(v)
        return out

    def call_module(self, node):
        name, mod = node.target, self.modules[node.target]
        x = self.val(node.args[0]) if node.args else None
        inputs = self.flat_values(list(node.args) + list(node.kwargs.values()))
        if name in self.ignore:
            self.freeze(inputs, f"'{name}' is in ignore")
            return None
        if name in self.called and any(True for _ in mod.parameters(recurse=False)):
            raise PruneError(f"layer '{name}' ({type(mod).__name__}) is called more than once; "
                             "shared layers are not supported, pass it in ignore=[...]")
        self.called.add(name)
        out_shape = _shape(node)
        if isinstance(mod, nn.modules.conv._ConvNd):
            if mod.transposed:
                raise PruneError(f"layer '{name}' ({type(mod).__name__}): transposed "
                                 "convolutions are not supported; pass it in ignore=[...]")
            if mod.groups == 1:
                self.consume(x, name, mod, 1)
                return self.produce(mod.out_channels, 1, name, mod)
            if mod.groups == mod.in_channels == mod.out_channels:
                if x is None:
                    return None
                if x.dim != 1 or len(x.segments) != 1 or x.segments[0][1] != 1 \
                        or x.segments[0][0] is None:
                    self.freeze(x, f"'{name}': depthwise convolution over a mixed input")
                    return None
                self.spaces.add_member(x.segments[0][0], Member(name, mod, "depthwise"))
                return x
            raise PruneError(f"layer '{name}' ({type(mod).__name__}, groups={mod.groups}): "
                             "grouped convolutions other than depthwise are not supported; "
                             "pass it in ignore=[...]")
        if isinstance(mod, nn.Linear):
            in_shape = _shape(node.args[0])
            self.consume(x, name, mod, len(in_shape) - 1)
            return self.produce(mod.out_features, len(out_shape) - 1, name, mod)
        if isinstance(mod, nn.modules.batchnorm._BatchNorm):
            if x is not None:
                self.consume(x, name, mod, 1, role="norm")
            return x
        if isinstance(mod, nn.LayerNorm):
            if x is None:
                return None
            in_nd = len(_shape(node.args[0]))
            if len(mod.normalized_shape) == 1 and x.dim == in_nd - 1:
                self.consume(x, name, mod, x.dim, role="norm")
                return x
            if x.dim >= in_nd - len(mod.normalized_shape):
                self.freeze(x, f"'{name}': LayerNorm over several dimensions")
            return x
        if isinstance(mod, nn.Embedding):
            return self.produce(mod.embedding_dim, len(out_shape) - 1, name, mod, role="embed")
        if _is_self_attention(mod):
            return self.attention(node, name, mod, x)
        if isinstance(mod, nn.Flatten):
            return self.reshape(node, x)
        if isinstance(mod, _POOL_MODULES):
            return self.pool(name, x)
        if isinstance(mod, _KEEP_MODULES):
            return x
        if any(True for _ in mod.parameters()):
            if inputs:
                raise PruneError(f"layer '{name}' ({type(mod).__name__}) is not supported by "
                                 "pruning; pass it in ignore=[...] to keep its channels")
            return None
        self.freeze(inputs, f"'{name}' ({type(mod).__name__}) is not followed by the tracer")
        return None

    def attention(self, node, name, mod, x):
        args = list(node.args) + [node.kwargs.get(k) for k in ("key", "value") if k in node.kwargs]
        if not (mod.batch_first and mod._qkv_same_embed_dim and mod.bias_k is None
                and not mod.add_zero_attn and len(args) >= 3 and args[0] is args[1] is args[2]):
            raise PruneError(f"layer '{name}' (MultiheadAttention): only self-attention "
                             "(query, key and value the same tensor) with batch_first=True and "
                             "no bias_k or add_zero_attn is supported; pass it in ignore=[...]")
        in_nd = len(_shape(node.args[0]))
        self.consume(x, name, mod, in_nd - 1, role="attn_in")
        head_dim = mod.embed_dim // mod.num_heads
        self.spaces.new(mod.num_heads, Member(name, mod, "heads", repeat=head_dim))
        out = self.produce(mod.embed_dim, in_nd - 1, name, mod, role="attn_out")
        return [out, None]

    def call_function(self, node):
        target, args = node.target, node.args
        method = target if node.op == "call_method" else None
        if _shape(node) is None:  # sizes, dims, tuples of tensors from functions
            if target is operator.getitem:
                v = self.val(args[0])
                if isinstance(v, list):
                    return v[args[1]] if isinstance(args[1], int) else None
            return None
        x = self.val(args[0]) if args else None
        if target is operator.getitem:
            v = self.val(args[0])
            if isinstance(v, list):
                return v[args[1]]
            if v is not None:
                self.freeze(v, f"'{node.name}': indexing a tensor with channels")
            return None
        if target in _ELEMENTWISE_FUNCTIONS or method in _ELEMENTWISE_METHODS:
            return self.elementwise(node)
        if target in _POOL_FUNCTIONS:
            return self.pool(node.name, x)
        if target in _KEEP_FUNCTIONS or method in _KEEP_METHODS:
            return x
        if target is torch.flatten or method in ("flatten", "view", "reshape") \
                or target is torch.reshape:
            return self.reshape(node, x)
        if target is torch.transpose or method == "transpose":
            return self.transpose(node, x)
        if target is torch.permute or method == "permute":
            return self.permute(node, x)
        if target in (torch.cat, getattr(torch, "concat", torch.cat)):
            return self.cat(node)
        if method in _REDUCE or target in (torch.mean, torch.sum, torch.amax, torch.amin):
            return self.reduce(node, x)
        inputs = self.flat_values(list(args) + list(node.kwargs.values()))
        if inputs:
            self.freeze(inputs, f"'{node.name}' ({getattr(target, '__name__', target)}) is not "
                                "followed by the tracer")
        return None

    def pool(self, name, x):
        if x is not None and x.dim != 1:
            self.freeze(x, f"'{name}': pools over the channels' dimension")
            return None
        return x

    def elementwise(self, node):
        out_nd = len(_shape(node))
        operands = [a for a in list(node.args) + list(node.kwargs.values())
                    if isinstance(a, torch.fx.Node) and _shape(a) is not None]
        tracked, dims = [], set()
        for a in operands:
            v = self.val(a)
            if v is not None:
                tracked.append(v)
                dims.add(v.dim + out_nd - len(_shape(a)))
        if not tracked:
            return None
        if len(dims) != 1:
            self.freeze(tracked, f"'{node.name}': combines channels on different dimensions")
            return None
        dim = dims.pop()
        joined = self.join(tracked, f"'{node.name}'")
        for a in operands:
            if self.val(a) is None:
                shape = _shape(a)
                i = dim - (out_nd - len(shape))
                if i >= 0 and shape[i] != 1 and not self.parameter_member(a, i, joined):
                    self.freeze(tracked, f"'{node.name}': combines channels with a tensor "
                                         "whose channels cannot be pruned")
        return Channels(dim, joined.segments)

    def parameter_member(self, node, dim, chans):
        """A model parameter combined with channels (a position embedding, a learned scale):
        sliced with them when it is used only here and the channels are one space."""
        if node.op != "get_attr" or len(chans.segments) != 1 or chans.segments[0][0] is None \
                or chans.segments[0][1] != 1 or self.attr_uses.get(node.target) != 1:
            return False
        owner_name, _, attr = node.target.rpartition(".")
        owner = self.model.get_submodule(owner_name) if owner_name else self.model
        if not isinstance(getattr(owner, attr, None), nn.Parameter) or node.target in self.ignore:
            return False
        self.spaces.add_member(chans.segments[0][0],
                               Member(node.target, owner, "tensor", attr=attr, dim=dim))
        return True

    def reshape(self, node, x):
        if x is None:
            return None
        src, dst = _shape(node.args[0]), _shape(node)
        d, size = x.dim, src[x.dim]
        outer = math.prod(src[:d])
        inner = math.prod(src[d + 1:])
        for e in range(len(dst)):
            if math.prod(dst[:e]) == outer and dst[e] % size == 0 \
                    and (dst[e] // size) * math.prod(dst[e + 1:]) == inner:
                k = dst[e] // size
                return Channels(e, tuple((sid, rep * k) for sid, rep in x.segments))
        self.freeze(x, f"'{node.name}': a reshape that splits channels")
        return None

    def transpose(self, node, x):
        if x is None:
            return None
        nd = len(_shape(node))
        a, b = (int(v) % nd for v in node.args[1:3])
        dim = b if x.dim == a else a if x.dim == b else x.dim
        return Channels(dim, x.segments)

    def permute(self, node, x):
        if x is None:
            return None
        dims = node.args[1] if isinstance(node.args[1], (list, tuple)) else node.args[1:]
        nd = len(_shape(node))
        return Channels([int(v) % nd for v in dims].index(x.dim), x.segments)

    def cat(self, node):
        tensors = node.args[0]
        nd = len(_shape(node))
        dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0)
        dim = int(dim) % nd
        vals = [self.val(t) for t in tensors]
        tracked = [v for v in vals if v is not None]
        if not tracked:
            return None
        if any(v.dim != dim for v in tracked):
            if len(tracked) == len(vals) and len({v.dim for v in tracked}) == 1:
                return Channels(tracked[0].dim, self.join(tracked, f"'{node.name}'").segments)
            self.freeze(tracked, f"'{node.name}': concatenates across channels")
            return None
        segments = []
        for t, v in zip(tensors, vals):
            segments += list(v.segments) if v is not None else [(None, _shape(t)[dim])]
        return Channels(dim, tuple(segments))

    def reduce(self, node, x):
        if x is None:
            return None
        nd = len(_shape(node.args[0]))
        dims = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
        keepdim = node.args[2] if len(node.args) > 2 else node.kwargs.get("keepdim", False)
        if dims is None:
            self.freeze(x, f"'{node.name}': reduces over every dimension")
            return None
        dims = [int(d) % nd for d in (dims if isinstance(dims, (list, tuple)) else [dims])]
        if x.dim in dims:
            self.freeze(x, f"'{node.name}': reduces over channels")
            return None
        return Channels(x.dim if keepdim else x.dim - sum(d < x.dim for d in dims), x.segments)


def find_groups(model, example_inputs, ignore=(), tracer="auto"):
    """Traces `model` on `example_inputs` and returns (groups, notes): every channel group
    (frozen ones included, with their reasons) and why spaces were frozen.

    tracer: "fx" (symbolic tracing), "autograd" (the graph of one run, autograd_trace.py), or
    "auto": torch.fx where the model traces, autograd's graph otherwise."""
    from .autograd_trace import autograd_graph

    names = {n for n, m in model.named_modules() if any(m is i for i in ignore)}
    names |= {i for i in ignore if isinstance(i, str)}
    if not isinstance(example_inputs, (tuple, list)):
        example_inputs = (example_inputs,)
    if tracer not in ("auto", "fx", "autograd"):
        raise PruneError(f"tracer must be auto, fx or autograd, not {tracer!r}")
    notes = []
    gm = None
    if tracer in ("auto", "fx"):
        try:
            gm = torch.fx.symbolic_trace(model)
        except Exception as e:  # torch.fx raises many types for code it cannot trace
            why = (f"{type(model).__name__} does not trace with torch.fx ({type(e).__name__}: "
                   f"{str(e).splitlines()[0] if str(e) else ''})")
            if tracer == "fx":
                raise PruneError(why + "; pass tracer='autograd' to record one run instead") from e
            notes.append(why + "; its graph was recorded from autograd instead (the path "
                         "this run took)")
    was_training = model.training
    if gm is not None:
        model.eval()
        try:
            with torch.no_grad():
                ShapeProp(gm).propagate(*example_inputs)
        except RuntimeError as e:  # ShapeProp wraps the error; say where and what
            where = re.search(r"target=([^\]]+)\]", str(e))
            cause = str(e.__cause__ or e.__context__ or e).splitlines()[0]
            at = f" (at '{where.group(1)}')" if where else ""
            raise PruneError(f"{type(model).__name__} does not run on the example inputs{at}: "
                             f"{cause}") from e
        finally:
            model.train(was_training)
    else:
        gm = autograd_graph(model, example_inputs)
    walker = _Tracer(model, names)
    walker.run(gm)
    groups = [Group(size=s.size, members=s.members, frozen=list(dict.fromkeys(s.frozen)))
              for s in walker.spaces.roots() if s.members]
    return groups, notes + walker.notes
