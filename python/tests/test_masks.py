"""Masks kept equal across ranks: three real gloo processes on 127.0.0.1."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest
import torch

from seedance_prune.masks import MaskSet, pack_bits, unpack_bits

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mask_worker.py")
# The project's port picker (reserved against the other test processes, never handed out twice).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests"))
from testing.ports import free_port  # noqa: E402


def start(scenario, tmp_path, world=3, backend="gloo"):
    port = free_port()
    return [subprocess.Popen([sys.executable, WORKER, str(r), str(world), str(port), scenario,
                              str(tmp_path), backend], stderr=subprocess.PIPE)
            for r in range(world)]


def finish(procs, tmp_path, ranks, timeout=60):
    for r in ranks:
        try:
            procs[r].wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            for p in procs:
                p.kill()
            pytest.fail(f"rank {r} did not finish in {timeout} s")
        assert procs[r].returncode == 0, procs[r].stderr.read().decode()[-2000:]
    return [json.load(open(tmp_path / f"{r}.json")) for r in ranks]


def test_bits_round_trip_every_length():
    g = torch.Generator().manual_seed(1)
    for n in (1, 7, 8, 9, 63, 64, 1000):
        mask = torch.rand(n, generator=g) > 0.5
        packed = pack_bits(mask)
        assert len(packed) == (n + 7) // 8
        assert torch.equal(unpack_bits(packed, (n,)), mask)


def test_a_change_bumps_the_version_and_checks_the_shape():
    masks = MaskSet({"a": (4,)})
    masks.set("a", [True] * 4)
    assert masks.version == 0  # unchanged
    masks.set("a", [True, False, True, True])
    assert masks.version == 1
    with pytest.raises(ValueError, match=r"mask 'a' has shape \(4,\), not \(3,\)"):
        masks.set("a", [True] * 3)


def test_masks_and_outputs_are_equal_on_every_rank(tmp_path):
    procs = start("equal", tmp_path)
    results = finish(procs, tmp_path, range(3))
    assert [r["moved"] for r in results] == [True] * 3
    assert [r["moved_again"] for r in results] == [False] * 3
    assert {r["version"] for r in results} == {2}
    assert all(r["packed"] == results[0]["packed"] for r in results)
    assert all(r["output"] == results[0]["output"] for r in results)
    unmasked = MaskSet({"hidden": (64,), "blocks": (5,)}).pack().tolist()
    assert results[0]["packed"] != unmasked  # the root's masks, not the defaults


def test_a_stale_rank_refuses_to_run_on_every_rank(tmp_path):
    procs = start("stale", tmp_path)
    results = finish(procs, tmp_path, range(3))
    for r in results:
        assert "ran" not in r
        assert "rank 1 has version 3" in r["refused"] and "rank 2" not in r["refused"]


def test_a_killed_rank_is_detected(tmp_path):
    procs = start("killed", tmp_path)
    deadline = time.monotonic() + 60
    while not all((tmp_path / f"ready.{r}").exists() for r in range(3)):
        assert time.monotonic() < deadline and all(p.poll() is None for p in procs)
        time.sleep(0.05)
    procs[2].send_signal(signal.SIGKILL)
    procs[2].wait(timeout=10)
    (tmp_path / "go").touch()
    for r in finish(procs, tmp_path, [0, 1]):
        assert "broadcast" not in r
        assert "mask broadcast failed, a rank is gone or late" in r["error"]
        assert r["detected_s"] <= 15


NCCL_MISSING = ("NCCL needs a CUDA device (one per rank): run on the GPU machine "
                "(scripts/gpu-check --sparsity)")


@pytest.mark.skipif(not torch.cuda.is_available() or not torch.distributed.is_nccl_available(),
                    reason=NCCL_MISSING)
def test_nccl_path_with_world_size_one(tmp_path):
    """NCCL needs one GPU per rank and the machine lent here has one: the same calls as over
    gloo (broadcast, verify, the guard, a masked forward) on CUDA tensors, world size 1."""
    [result] = finish(start("equal", tmp_path, world=1, backend="nccl"), tmp_path, [0])
    cpu_dir = tmp_path / "gloo"
    cpu_dir.mkdir()
    [cpu] = finish(start("equal", cpu_dir, world=1), cpu_dir, [0])
    assert result["moved"] is False  # the root alone: nothing differs, no payload
    assert result["version"] == cpu["version"] == 2
    assert result["packed"] == cpu["packed"]
    assert result["output"] == pytest.approx(cpu["output"], rel=1e-5, abs=1e-6)


def test_world_size_one_over_gloo(tmp_path):
    """The calls the NCCL test makes, on the CPU: a root alone moves no payload."""
    [result] = finish(start("equal", tmp_path, world=1), tmp_path, [0])
    assert result["moved"] is False and result["moved_again"] is False
    assert result["version"] == 2
    assert result["packed"] != MaskSet({"hidden": (64,), "blocks": (5,)}).pack().tolist()
