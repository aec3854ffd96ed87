"""state_dict() and load_state_dict() on a TrimmedModel's modules, one module at a time.

A plain state_dict() holds references to the parameters: torch.save reads them later, when
TrimmedModel may have moved them, and the process faults. Likewise load_state_dict() writes
into tensors that may be moved. So each module with tensors of its own gets three hooks:
- a state-dict hook that replaces the references to its own tensors with copies, each
  acquired for reading while it is copied (to host memory: a copy on the GPU would need the
  whole model's size there). With keep_vars=True the caller asked for the live tensors and
  gets them;
- a load pre-hook that acquires the module's own tensors for writing before PyTorch's loader
  copies into them, and a load post-hook that releases them once the module (and the modules
  under it) are loaded.
PyTorch's own loader does the rest: names, strict, missing and unexpected keys, size errors.
Both trimmed.state_dict() (names under "model.") and trimmed.model.state_dict() work, and the
budget holds one module's tensors at a time (with its parents' during a load).
"""
import torch

ASSIGN_REFUSED = (
    "TrimmedModel: load_state_dict(assign=True) would replace the tensors TrimmedModel keeps "
    "under the budget with the loaded ones; load without assign (the values are copied in)")


def install(trimmed):
    """The three hooks on every module of trimmed.model with managed tensors of its own;
    returns their handles."""
    handles = []
    for module in trimmed.model.modules():
        own = [(name, t) for name, t in list(module._parameters.items()) +
               list(module._buffers.items()) if t is not None]
        ids = [bid for bid in (trimmed._by_storage.get(t.data_ptr()) for _, t in own)
               if bid is not None]
        if not ids:
            continue
        ids = list(dict.fromkeys(ids))  # a tensor registered twice in one module: once
        handles.append(module._register_state_dict_hook(_copy_out_hook(trimmed, own)))
        handles.append(module._register_load_state_dict_pre_hook(_acquire_hook(trimmed, ids)))
        handles.append(module.register_load_state_dict_post_hook(
            lambda _module, _keys, ids=ids: trimmed._release(ids)))
    return handles


def copy_out(trimmed, t):
    """A copy of tensor `t` in host memory, its buffer acquired for reading meanwhile (or `t`
    detached when TrimmedModel does not keep it: it never moves)."""
    bid = trimmed._by_storage.get(t.data_ptr())
    if bid is None:
        return t.detach()
    trimmed._acquire([bid], write=False)
    try:
        return t.detach().to("cpu", copy=True)
    finally:
        trimmed._release([bid])


def _copy_out_hook(trimmed, own):
    def hook(_module, destination, prefix, _local_metadata):
        for name, t in own:
            key = prefix + name
            value = destination.get(key)
            if value is not None and value is not t:  # keep_vars=True: the live tensor
                destination[key] = copy_out(trimmed, t)
    return hook


def _acquire_hook(trimmed, ids):
    def hook(_state_dict, _prefix, local_metadata, *_rest):
        if local_metadata.get("assign_to_params_buffers", False):  # torch >= 2.1
            raise RuntimeError(ASSIGN_REFUSED)
        trimmed._acquire(ids, write=True)
    return hook
