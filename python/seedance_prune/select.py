"""select(): the most accurate configuration that meets a device's budget, from measured
profiles (HAQ and NetAdapt choose from measurements too, not from rules).

A profile is a dict (a row of `bench/run prune`'s output, or of a JSON file):
    {"name": "pruned50-bf16", "accuracy": 97.1, "latency_p99_ms": 0.8, "memory_mb": 3.2,
     "energy_mj": 1.9}
`energy_mj` (energy per inference, from NVML's energy counter on a GPU) is needed only when an
energy budget is given. Budgets for device classes are data: profiles/devices.json.
"""
import json
import os

CONSTRAINTS = (("latency_p99_ms", "P99 latency", "ms"), ("memory_mb", "peak memory", "MB"),
               ("energy_mj", "energy per inference", "mJ"))


class NoConfigFits(ValueError):
    """No profile meets the budget. `failures` maps each constraint to how many profiles it
    rejects; the message names the constraint(s) and the closest profile."""

    def __init__(self, message, failures):
        super().__init__(message)
        self.failures = failures


def _misses(profile, budget, min_accuracy):
    misses = []
    for key, label, unit in CONSTRAINTS:
        if budget.get(key) is None:
            continue
        if key not in profile:
            raise ValueError(f"profile {profile.get('name', '?')!r} has no {key!r}, which the "
                             f"{label} budget needs")
        if profile[key] > budget[key]:
            misses.append((key, f"{label} {profile[key]:g} {unit} > {budget[key]:g} {unit}"))
    if min_accuracy is not None and profile["accuracy"] < min_accuracy:
        misses.append(("accuracy", f"accuracy {profile['accuracy']:g}% < {min_accuracy:g}%"))
    return misses


def select(profiles, latency_p99_ms=None, memory_mb=None, energy_mj=None, min_accuracy=None):
    """The most accurate profile within every given budget (ties: the lower P99 latency).
    Raises NoConfigFits naming the constraint that failed when none is."""
    profiles = list(profiles)
    if not profiles:
        raise NoConfigFits("no profiles to choose from", {})
    budget = {"latency_p99_ms": latency_p99_ms, "memory_mb": memory_mb, "energy_mj": energy_mj}
    fits, failures, nearest = [], {}, None
    for p in profiles:
        misses = _misses(p, budget, min_accuracy)
        if not misses:
            fits.append(p)
            continue
        for key, _ in misses:
            failures[key] = failures.get(key, 0) + 1
        if nearest is None or len(misses) < len(nearest[1]):
            nearest = (p, misses)
    if fits:
        return max(fits, key=lambda p: (p["accuracy"], -p.get("latency_p99_ms", 0.0)))
    always = [k for k, n in failures.items() if n == len(profiles)]
    what = ", ".join(always) if always else "no single constraint; each profile misses one"
    raise NoConfigFits(
        f"no configuration of {len(profiles)} fits the budget: failed on {what} "
        f"(closest: {nearest[0].get('name', '?')}: " + "; ".join(m for _, m in nearest[1]) + ")",
        failures)


def load_profiles(path):
    """Profiles from a JSON file: a list of profiles, or an object with a "profiles" list."""
    with open(path) as f:
        data = json.load(f)
    return data["profiles"] if isinstance(data, dict) else data


DEVICES_JSON = os.path.join(os.path.dirname(__file__), "profiles", "devices.json")


def device_budget(name, path=DEVICES_JSON):
    """A device class's budget (keyword arguments for select()) from profiles/devices.json."""
    with open(path) as f:
        devices = json.load(f)["devices"]
    if name not in devices:
        raise KeyError(f"no device class {name!r} in {path}; known: {', '.join(sorted(devices))}")
    return {k: v for k, v in devices[name].items() if k in (
        "latency_p99_ms", "memory_mb", "energy_mj", "min_accuracy")}
