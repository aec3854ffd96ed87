"""seedance_prune: structured pruning that makes PyTorch models smaller, a precision and
pruning profile matrix, and a selector that picks a configuration for a device's budget.

    import seedance_prune
    model = seedance_prune.prune(model, example_inputs, ratio=0.4)   # 40% of channels removed
    print(seedance_prune.report(model).summary())

Needs PyTorch 1.12 or newer (torch.fx). See docs/prune.md.
"""
from .groups import PruneError
from .prune import PruneReport, count_parameters, keep_count, prune, report
from .select import NoConfigFits, device_budget, load_profiles, select
from .zero_code import channelwise, pruning

__all__ = ["NoConfigFits", "PruneError", "PruneReport", "channelwise", "count_parameters",
           "device_budget", "keep_count", "load_profiles", "prune", "pruning", "report", "select"]
