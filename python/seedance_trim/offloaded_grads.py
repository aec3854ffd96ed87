"""Gradients moved off the device as autograd produces them (TrimmedModel(gradients="cpu")).

Once autograd has accumulated a parameter's gradient, a hook copies it into a host tensor of the
parameter's own (pinned on CUDA; made at the first backward pass, reused after) and drops it from
the parameter. The backward pass then holds the gradients of the node it runs, not the whole
model's. The copy is issued on autograd's stream and the gradient's memory goes back to
PyTorch's allocator on that same stream, so nothing waits on the host.

A second backward pass before the step (gradient accumulation) adds its gradient to the one on
the host on the device, in the order autograd would have: the same bits. optimizer_step brings
each gradient back for its update and consumes it; TrimmedModel.zero_grad() drops them
(optimizer.zero_grad() cannot see them).

The hook is register_post_accumulate_grad_hook on PyTorch >= 2.1; before, a hook on the
parameter's AccumulateGrad node (kept alive here, or autograd would make a new one without it).
Sparse gradients stay where they are.
"""
import torch


class OffloadedGrads:
    def __init__(self, params):
        self._host = {}       # id(param) -> its host tensor
        self._pending = set()  # id(param) whose host tensor holds a gradient not yet consumed
        self._nodes = []      # AccumulateGrad nodes (PyTorch < 2.1)
        self.handles = []
        self.bytes_moved = 0  # gradient bytes copied off the device, all steps
        for p in params:
            if not p.requires_grad:
                continue
            if hasattr(p, "register_post_accumulate_grad_hook"):
                self.handles.append(p.register_post_accumulate_grad_hook(self._off))
            else:
                with torch.enable_grad():
                    node = p.expand_as(p).grad_fn.next_functions[0][0]
                self._nodes.append(node)
                self.handles.append(node.register_hook(lambda *_, p=p: self._off(p)))

    def _off(self, p):
        g = p.grad
        if g is None or g.is_sparse:
            return
        key = id(p)
        host = self._host.get(key)
        if host is None or host.shape != g.shape or host.dtype != g.dtype:
            host = torch.empty(g.size(), dtype=g.dtype, pin_memory=g.is_cuda)
            self._host[key] = host
        if key in self._pending:  # accumulate as autograd would: earlier + this, on the device
            acc = host.to(g.device, non_blocking=True)
            acc.add_(g)
            host.copy_(acc, non_blocking=True)
        else:
            host.copy_(g, non_blocking=True)
            self._pending.add(key)
        self.bytes_moved += g.numel() * g.element_size()
        p.grad = None

    def pending(self, p):
        """Whether a gradient of `p` waits on the host."""
        return id(p) in self._pending

    def take(self, p):
        """The gradient of `p` on its device, consumed from the host (REQUIRES: pending)."""
        self._pending.discard(id(p))
        return self._host[id(p)].to(p.device, non_blocking=True)

    def drop(self):
        self._pending.clear()

    def pending_bytes(self):
        return sum(self._host[k].numel() * self._host[k].element_size() for k in self._pending)
