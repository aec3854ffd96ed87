"""seedance_trim: seedance::trim from Python (ctypes over libseedance_trim.so).

    from seedance_trim import TrimManager, TrimmedModel
    manager = TrimManager.host(fast_bytes=40 << 20, slow_bytes=512 << 20)  # or TrimManager.cuda
    model = TrimmedModel(model, manager)

TrimmedModel and StreamedModel (weight streaming, CPU backend) need PyTorch (1.12 or newer);
TrimManager needs only the library.
"""
from .manager import TrimError, TrimManager, policy

__all__ = ["StreamedModel", "TrimError", "TrimManager", "TrimmedModel", "policy"]


def __getattr__(name):
    if name == "TrimmedModel":  # imports torch only when asked for
        from .torch_hooks import TrimmedModel
        return TrimmedModel
    if name == "StreamedModel":
        from .streaming import StreamedModel
        return StreamedModel
    raise AttributeError(name)
