"""The graph of a model that torch.fx cannot trace (data-dependent control flow, calls fx does
not understand), recorded from autograd instead, as Torch-Pruning does: the model runs once on
the example inputs; forward hooks mark where each layer (a leaf module, as torch.fx would call
it) begins and ends; the autograd graph between layers gives the operations, and one backward
pass (torch.autograd.grad, so no .grad is touched) gives every operation's output shape.

The result is a torch.fx.Graph of the path this run took, with the same node kinds symbolic
tracing produces, so trace.py's `_Tracer` follows its channels unchanged. Operations it does not
map are kept as opaque calls, whose channels the tracer then keeps (never prunes wrongly).
"""
import operator
from dataclasses import dataclass

import torch
import torch.fx

from .groups import PruneError


@dataclass
class _Meta:  # what trace.py reads of node.meta["tensor_meta"]
    shape: tuple


def _opaque(*args):  # stands for an operation the tracer does not follow
    raise RuntimeError("not callable")


_KEEP = {  # autograd node names of operations that keep every channel where it is
    "ReluBackward0", "GeluBackward0", "SigmoidBackward0", "TanhBackward0", "HardtanhBackward0",
    "SiluBackward0", "HardswishBackward0", "HardsigmoidBackward0", "LeakyReluBackward0",
    "EluBackward0", "SoftplusBackward0", "MishBackward0", "CloneBackward0", "ToCopyBackward0",
    "ThresholdBackward0", "ClampBackward1", "ClampMinBackward0", "AbsBackward0",
    "MaxPool2DWithIndicesBackward0", "MaxPool1DWithIndicesBackward0", "AvgPool2DBackward0",
    "AdaptiveAvgPool2DBackward0", "AdaptiveMaxPool2DBackward0", "NativeDropoutBackward0",
}
_BINARY = {"AddBackward0": operator.add, "SubBackward0": operator.sub,
           "MulBackward0": operator.mul, "DivBackward0": operator.truediv}
_SCALAR = {"AddBackward1": operator.add, "SubBackward1": operator.sub,
           "MulBackward1": operator.mul, "DivBackward1": operator.truediv}
_RESHAPE = {"ViewBackward0", "UnsafeViewBackward0", "ReshapeAliasBackward0",
            "_ReshapeAliasBackward0"}


def _tensors(value):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v)]
    return []


def _leaf_modules(model):
    """The modules torch.fx would call as leaves (torch.nn's own, except containers); their
    children are inside them."""
    is_leaf = torch.fx.Tracer().is_leaf_module
    leaves, inside = {}, set()
    for name, m in model.named_modules():
        if not name or any(name.startswith(p + ".") for p in inside):
            continue
        if is_leaf(m, name):
            leaves[name] = m
            inside.add(name)
    return leaves


class _Recorder:
    def __init__(self, model):
        self.model = model
        self.calls = []           # (name, input grad_fns, outputs)
        self.out_fn = {}          # grad_fn -> (call index, output index)
        self.params = {id(p): n for n, p in model.named_parameters()}

    def hooks(self):
        handles = []
        for name, m in _leaf_modules(self.model).items():
            def pre(mod, inputs, name=name):
                mod._seedance_inputs = [(t.grad_fn, t) if t.requires_grad else (None, t)
                                        for t in _tensors(inputs)]

            def post(mod, inputs, output, name=name):
                outs = _tensors(output)
                ins = mod.__dict__.pop("_seedance_inputs", [])
                if any(t.grad_fn is not None and t.grad_fn in {g for g, _ in ins} for t in outs):
                    return  # returns its input (Identity, Dropout in eval): nothing happened
                index = len(self.calls)
                self.calls.append((name, ins, output, outs))
                for i, t in enumerate(outs):
                    if t.grad_fn is not None:
                        self.out_fn[t.grad_fn] = (index, i)

            handles += [m.register_forward_pre_hook(pre), m.register_forward_hook(post)]
        return handles


def autograd_graph(model, example_inputs):
    """(a GraphModule-like object with .graph, ready for trace._Tracer) for `model`."""
    inputs = [t.detach().clone().requires_grad_(t.is_floating_point())
              if isinstance(t, torch.Tensor) else t for t in example_inputs]
    rec = _Recorder(model)
    handles = rec.hooks()
    # Buffers a model uses outside its layers (a fixed offset) show in the graph, with their
    # shapes, only if they require a gradient for this run.
    leaves = _leaf_modules(model)
    buffers = [b for name, m in model.named_modules()
               if name not in leaves and not any(name.startswith(p + ".") for p in leaves)
               for b in m.buffers(recurse=False) if b.is_floating_point() and not b.requires_grad]
    was_training = model.training
    model.eval()
    try:
        for b in buffers:
            b.requires_grad_(True)
        with torch.enable_grad():
            output = model(*inputs)
    finally:
        for b in buffers:
            b.requires_grad_(False)
        model.train(was_training)
        for h in handles:
            h.remove()
    outs = [t for t in _tensors(output) if t.grad_fn is not None]
    if not outs:
        raise PruneError(f"{type(model).__name__}: its output does not depend on its "
                         "parameters through autograd, so there is no graph to prune")
    return _Builder(model, rec, inputs).build(output, outs)


class _Builder:
    def __init__(self, model, rec, inputs):
        self.model, self.rec, self.inputs = model, rec, inputs
        self.graph = torch.fx.Graph()
        self.node_of = {}      # autograd node (or (call, out index)) -> fx node
        self.shapes = {}       # autograd node -> output shapes
        self.input_ids = {id(t): i for i, t in enumerate(inputs) if isinstance(t, torch.Tensor)}
        self.placeholders = {}
        self.call_nodes = {}

    # --- shapes from one backward pass -----------------------------------------------------
    def record_shapes(self, outs):
        seen, stack, handles = set(), [t.grad_fn for t in outs], []
        while stack:
            fn = stack.pop()
            if fn is None or fn in seen:
                continue
            seen.add(fn)

            def hook(grad_inputs, grad_outputs, fn=fn):
                self.shapes[fn] = [None if g is None else tuple(g.shape) for g in grad_outputs]
            handles.append(fn.register_hook(hook))
            stack += [n for n, _ in fn.next_functions]
        leaves = [t for t in self.inputs if isinstance(t, torch.Tensor) and t.requires_grad]
        leaves += [p for p in self.model.parameters() if p.requires_grad]
        try:
            torch.autograd.grad(outs, leaves, [torch.ones_like(t) for t in outs],
                                allow_unused=True)
        finally:
            for h in handles:
                h.remove()

    # --- building ----------------------------------------------------------------------------
    def placeholder(self, i):
        if i not in self.placeholders:
            node = self.graph.placeholder(f"input_{i}")
            node.meta["tensor_meta"] = _Meta(tuple(self.inputs[i].shape))
            self.placeholders[i] = node
        return self.placeholders[i]

    def const(self, tensor):
        node = self.graph.placeholder(f"constant_{len(self.graph.nodes)}")
        if tensor is not None:
            node.meta["tensor_meta"] = _Meta(tuple(tensor.shape))
        return node

    def build(self, output, outs):
        self.record_shapes(outs)
        for i in sorted(self.input_ids.values()):
            self.placeholder(i)
        values = [self.value(t.grad_fn) for t in outs]
        self.graph.output(values[0] if len(values) == 1 else tuple(values))
        return _GraphHolder(self.graph)

    def value(self, fn):
        """The fx node for autograd node `fn` (iterative: deep models do not recurse)."""
        stack = [fn]
        while stack:
            top = stack[-1]
            if top is None or top in self.node_of:
                stack.pop()
                continue
            deps = self.dependencies(top)
            pending = [d for d in deps if d is not None and d not in self.node_of]
            if pending:
                stack += pending
                continue
            stack.pop()
            self.node_of[top] = self.make(top)
        return self.node_of.get(fn)

    def dependencies(self, fn):
        if fn in self.rec.out_fn:
            call, _ = self.rec.out_fn[fn]
            return [g for g, _ in self.rec.calls[call][1]]
        if type(fn).__name__ == "AccumulateGrad":
            return []
        return [n for n, _ in fn.next_functions]

    def make(self, fn):
        if fn in self.rec.out_fn:
            return self.module_output(*self.rec.out_fn[fn])
        kind = type(fn).__name__
        if kind == "AccumulateGrad":
            var = fn.variable
            if id(var) in self.input_ids:
                return self.placeholder(self.input_ids[id(var)])
            if id(var) in self.rec.params:
                node = self.graph.get_attr(self.rec.params[id(var)])
                node.meta["tensor_meta"] = _Meta(tuple(var.shape))
                return node
            return self.const(var)
        args = [self.node_of.get(n) if n is not None else None for n, _ in fn.next_functions]
        shapes = self.shapes.get(fn) or [None]
        if len(shapes) != 1:
            return self.call(_opaque, [a for a in args if a is not None], None)
        shape = shapes[0]
        if kind in _KEEP:
            return self.call(torch.relu, args[:1], shape)
        if kind in _BINARY:
            saved = (getattr(fn, "_saved_self", None), getattr(fn, "_saved_other", None))
            operands = []
            for a, s in zip(args, saved):
                if a is None:  # a tensor that needs no gradient: its shape if autograd kept it
                    a = self.const(s) if isinstance(s, torch.Tensor) else 1.0
                operands.append(a)
            return self.call(_BINARY[kind], operands, shape)
        if kind in _SCALAR:
            return self.call(_SCALAR[kind], [args[0], 1.0], shape)
        if kind in _RESHAPE:
            return self.call(torch.reshape, [args[0], shape], shape)
        if kind == "TransposeBackward0":
            return self.call(torch.transpose, [args[0], fn._saved_dim0, fn._saved_dim1], shape)
        if kind == "TBackward0":
            return self.call(torch.transpose, [args[0], 0, 1], shape)
        if kind == "PermuteBackward0":
            return self.call(torch.permute, [args[0], tuple(fn._saved_dims)], shape)
        if kind == "CatBackward0" and all(a is not None for a in args):
            return self.call(torch.cat, [tuple(args), fn._saved_dim], shape)
        if kind in ("MeanBackward1", "SumBackward1"):
            target = torch.mean if kind == "MeanBackward1" else torch.sum
            return self.call(target, [args[0], tuple(fn._saved_dim), fn._saved_keepdim], shape)
        return self.call(_opaque, [a for a in args if a is not None], shape)

    def call(self, target, args, shape):
        node = self.graph.call_function(target, tuple(args))
        if shape is not None:
            node.meta["tensor_meta"] = _Meta(tuple(shape))
        return node

    def module_output(self, call, index):
        name, inputs, output, outs = self.rec.calls[call]
        if call not in self.call_nodes:
            args = []
            for g, t in inputs:
                if g is not None:
                    args.append(self.node_of[g])
                elif id(t) in self.input_ids:
                    args.append(self.placeholder(self.input_ids[id(t)]))
                else:
                    args.append(self.const(t))
            node = self.graph.call_module(name, tuple(args))
            if isinstance(output, torch.Tensor):
                node.meta["tensor_meta"] = _Meta(tuple(output.shape))
            self.call_nodes[call] = node
        node = self.call_nodes[call]
        if isinstance(output, torch.Tensor):
            return node
        item = self.graph.call_function(operator.getitem, (node, index))
        item.meta["tensor_meta"] = _Meta(tuple(outs[index].shape))
        return item


class _GraphHolder:
    def __init__(self, graph):
        self.graph = graph
