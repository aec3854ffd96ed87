"""An optimizer step that would write moved weights is refused, not a segmentation fault.

The usual mistake with a TrimmedModel is `opt.step()` instead of `model.optimizer_step(opt)`:
the step writes every parameter that has a gradient, TrimmedModel has moved most of them off
the fast tier (their memory is PROT_NONE on the CPU, unmapped on CUDA), and the process dies.
PyTorch >= 2.0 runs global optimizer pre-hooks before any optimizer's step
(torch.optim.optimizer.register_optimizer_step_pre_hook); the first TrimmedModel installs one
that refuses a step about to write a parameter a live TrimmedModel keeps but has not acquired,
or to skip one whose gradient TrimmedModel moved to host memory (gradients="cpu"), with a
RuntimeError that says what to call instead. model.optimizer_step(opt) and a step inside
`with model.all_acquired():` acquire first, so they pass. On PyTorch 1.x, which has no such
hook, the step still faults (docs/trim.md, "What faults").

Cost: nothing while no TrimmedModel is alive; otherwise one dict lookup per parameter with a
gradient per step.
"""
import importlib
import weakref

# torch.optim deletes its submodules' names on PyTorch 1.x: imported by its full name.
_optimizer_module = importlib.import_module("torch.optim.optimizer")

_live = weakref.WeakSet()  # TrimmedModels whose parameters the guard checks
_installed = False

REFUSED = (
    "TrimmedModel: {optimizer}.step() would write {name}, which TrimmedModel has moved off the "
    "fast tier (the process would stop with a segmentation fault or an illegal CUDA address). "
    "Call model.optimizer_step(optimizer), which steps one unit at a time under the budget, or "
    "step inside `with model.all_acquired():` when the budget holds the whole model")


WAITING = (
    "TrimmedModel: {optimizer}.step() would skip {name}: its gradient waits in host memory "
    "(gradients=\"cpu\"), where the optimizer does not look. Call "
    "model.optimizer_step(optimizer), which brings each gradient back for its update")


def available():
    """Whether this PyTorch runs global optimizer pre-hooks (>= 2.0)."""
    return hasattr(_optimizer_module, "register_optimizer_step_pre_hook")


def watch(trimmed):
    """Checks `trimmed`'s parameters before every optimizer step from now on, for as long as it
    lives; returns whether the guard runs on this PyTorch."""
    global _installed
    _live.add(trimmed)
    if not _installed and available():
        _optimizer_module.register_optimizer_step_pre_hook(check_step)
        _installed = True
    return _installed


def check_step(optimizer, _args=(), _kwargs=None):
    """The pre-hook: RuntimeError when the step would write a parameter a live TrimmedModel
    keeps and has not acquired (REFUSED), or would skip one whose gradient waits in host memory
    (gradients="cpu": p.grad is None, so a plain step silently leaves it as it was)."""
    models = [m for m in _live if not m._stepping]  # optimizer_step steps its own way
    if not models:
        return
    for group in optimizer.param_groups:
        for p in group["params"]:
            for m in models:
                # By the Parameter object, not its address: a collected model's addresses may
                # be reused, its parameters' ids not while it holds them.
                bid = m._ids.get(id(p))
                if bid is None:
                    continue
                name = m._name_of.get(bid, "a parameter")
                if p.grad is None and m._grads_off is not None and m._grads_off.pending(p):
                    raise RuntimeError(WAITING.format(optimizer=type(optimizer).__name__,
                                                      name=name))
                if p.grad is not None and m._counts.get(bid, 0) == 0:
                    raise RuntimeError(REFUSED.format(optimizer=type(optimizer).__name__,
                                                      name=name))
