"""Figures of a running process from /proc, for tests and benchmarks."""
import glob


def context_switches(pid):
    """Voluntary + involuntary context switches of all the process's threads so far."""
    total = 0
    for status in glob.glob(f"/proc/{pid}/task/*/status"):
        try:
            with open(status) as f:
                for line in f:
                    if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                        total += int(line.split()[1])
        except FileNotFoundError:
            pass  # a thread that just ended
    return total


def context_switches_by_thread(pid):
    """{thread name: voluntary + involuntary context switches so far}, threads of one name
    summed (e.g. several sd-io)."""
    out = {}
    for task in glob.glob(f"/proc/{pid}/task/*"):
        try:
            with open(f"{task}/comm") as f:
                name = f.read().strip()
            n = 0
            with open(f"{task}/status") as f:
                for line in f:
                    if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                        n += int(line.split()[1])
        except FileNotFoundError:
            continue  # a thread that just ended
        out[name] = out.get(name, 0) + n
    return out


def status_kb(pid, field):
    """A kB figure of /proc/PID/status (VmRSS, VmHWM, ...); 0 when absent."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0
