"""StreamedModel on a CUDA device (weight streaming, issue 41): outputs equal to the resident
model's, the ring and the resident units within the budget, no host waits, the plan's bytes per
step, and a new recording when the order or the stream changes. Run by scripts/gpu-check
--stream; without a GPU every test says it skipped and why."""
import copy

import pytest
import torch
import torchvision
from torch import nn

from test_trim_torch import SmallTransformer, model_bytes

CUDA_WHY = "no CUDA device visible to PyTorch (these run in scripts/gpu-check --stream)"
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason=CUDA_WHY)


def device_bytes(streamed):
    """The device memory the streamer holds: its ring and its resident units."""
    b = streamed._backend
    ring = b._ring.numel() if b._ring is not None else 0
    return ring + sum(t.numel() for t in b._resident.values())


def stream_on_cuda(model, inputs, share, forwards=4):
    from seedance_trim import StreamedModel
    plain = copy.deepcopy(model).eval().cuda()
    size = model_bytes(model)
    streamed = StreamedModel(model.eval().cuda(), int(size * share))
    assert streamed.device.type == "cuda"
    with torch.no_grad():
        want = plain(inputs)
        for _ in range(forwards):
            got = streamed(inputs)
            assert torch.equal(want, got), "outputs differ"
    torch.cuda.synchronize()
    return size, streamed


def test_resnet50_streams_on_cuda_within_the_budget_without_host_waits():
    torch.manual_seed(0)
    x = torch.randn(8, 3, 224, 224, device="cuda")
    size, streamed = stream_on_cuda(torchvision.models.resnet50(), x, 0.4)
    plan, stats = streamed.plan(), streamed.stats()
    assert device_bytes(streamed) <= int(size * 0.4) + 256, (plan, device_bytes(streamed))
    assert plan["streamed_bytes"] == size - plan["resident_bytes"] > 0, plan
    assert stats["host_waits"] == 0 and stats["order_misses"] == 0, stats
    assert stats["issued_at_begin"] == 1, stats  # only the very first copy
    # Three streaming forwards: each streamed unit copied once per forward.
    assert 3 * plan["streamed_bytes"] <= stats["bytes_copied"] <= \
        3 * plan["streamed_bytes"] + plan["ring_bytes"], (plan, stats)
    # Outside a forward, streamed units are in their pinned blocks, resident ones on the GPU.
    on_gpu = sum(p.numel() * p.element_size() for p in streamed.model.parameters() if p.is_cuda)
    assert 0 < on_gpu <= plan["resident_bytes"]


def test_transformer_streams_on_cuda_with_equal_outputs():
    torch.manual_seed(0)
    tokens = torch.randint(0, 4000, (8, 128), device="cuda")
    _, streamed = stream_on_cuda(SmallTransformer(d=512), tokens, 0.35)
    assert streamed.plan()["streamed_bytes"] > 0
    stats = streamed.stats()
    assert stats["host_waits"] == 0, stats
    # The embedding table is read in place from its pinned block, not streamed.
    assert stats["zero_copy_bytes"] == 4000 * 512 * 4 and "zero_copy_error" not in stats, stats
    weight = streamed.model.embed.weight
    assert weight.is_cuda and weight.data_ptr() == streamed._zero_copy[0].block.data_ptr()


class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b, self.c = nn.Linear(1024, 1024), nn.Linear(1024, 1024), nn.Linear(1024, 8)

    def forward(self, x, swap=False):
        x = self.b(self.a(x)) if not swap else self.a(self.b(x))
        return self.c(x)


def test_another_order_or_stream_on_cuda_records_again_with_equal_outputs():
    from seedance_trim import StreamedModel
    torch.manual_seed(0)
    model = Branchy().eval().cuda()
    plain = copy.deepcopy(model)
    streamed = StreamedModel(model, int(model_bytes(model) * 0.5))
    x = torch.randn(16, 1024, device="cuda")
    with torch.no_grad():
        for swap in (False, False, True, True, False, False):
            assert torch.equal(plain(x, swap=swap), streamed(x, swap=swap))
        assert streamed.stats()["replans"] == 2
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            assert torch.equal(plain(x), streamed(x))  # another stream: recorded again
            assert torch.equal(plain(x), streamed(x))  # streamed on that stream
        side.synchronize()
    stats = streamed.stats()
    assert stats["replans"] == 3 and stats["host_waits"] == 0, stats


# ---- training under TrimmedModel on the CUDA tiers (issue 41's GPU training target) ----

def wide_mlp():
    torch.manual_seed(2)
    layers = []
    for _ in range(4):
        layers += [nn.Linear(4096, 4096), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(4096, 10))


def test_trimmed_training_on_cuda_is_exact_and_activations_and_gradients_can_wait_on_the_host():
    from seedance_trim import TrimManager, TrimmedModel
    model = wide_mlp()
    size = model_bytes(model)
    x = torch.randn(1024, 4096, device="cuda")
    y = torch.randint(0, 10, (1024,), device="cuda")
    loss_fn = nn.CrossEntropyLoss()
    plain = copy.deepcopy(model).cuda()
    opt = torch.optim.SGD(plain.parameters(), lr=0.01, momentum=0.9)
    for _ in range(3):
        opt.zero_grad()
        loss_fn(plain(x), y).backward()
        opt.step()
    peaks = {}
    for activations, gradients in (("device", "device"), ("cpu", "device"), ("device", "cpu")):
        manager = TrimManager.cuda(int(size * 0.6), 2 * size, min_victim_bytes=0,
                                   async_copies=1)
        trimmed = TrimmedModel(copy.deepcopy(model), manager, activations=activations,
                               gradients=gradients).train()
        opt = torch.optim.SGD(trimmed.model.parameters(), lr=0.01, momentum=0.9)
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        for _ in range(3):
            opt.zero_grad()
            trimmed.zero_grad()
            loss_fn(trimmed(x), y).backward()
            trimmed.optimizer_step(opt)
        torch.cuda.synchronize()
        # PyTorch's allocations (not the weights): activations, gradients, momentum.
        peaks[(activations, gradients)] = torch.cuda.max_memory_allocated()
        stats = trimmed.stats()
        assert stats["fast_peak_used"] <= int(size * 0.6), stats
        got = trimmed.copied_state()
        for name, t in plain.named_parameters():
            assert torch.equal(t.detach().cpu(), got[name].cpu()), (activations, gradients, name)
    base = peaks[("device", "device")]
    # 4 saved activations of 1024 x 4096 floats (16 MiB each) wait on the host instead.
    assert peaks[("cpu", "device")] < base, peaks
    # The 4 weight gradients of 64 MiB: one at a time on the device instead of all 4.
    assert peaks[("device", "cpu")] <= base - (128 << 20), peaks


def test_a_reentrant_checkpoint_on_cuda_trains_exactly_under_the_budget():
    # The recomputation runs on autograd's device thread, inside the backward pass: its units
    # push TrimmedModel's hooks there, and their weights come back one unit at a time. Layers
    # of 1024 x 1024 (4 MiB): tensors under 1 MiB would stay on the GPU and nothing would move.
    from seedance_trim import TrimManager, TrimmedModel
    from test_trim_torch import CheckpointedMLP
    torch.manual_seed(7)
    model = CheckpointedMLP(width=1024)
    size = model_bytes(model)
    plain = copy.deepcopy(model).cuda().train()
    manager = TrimManager.cuda(int(size * 0.4), 2 * size, min_victim_bytes=0, async_copies=1)
    trimmed = TrimmedModel(model, manager).train()
    opt_plain = torch.optim.SGD(plain.parameters(), lr=0.01, momentum=0.9)
    opt_trim = torch.optim.SGD(trimmed.model.parameters(), lr=0.01, momentum=0.9)
    for _ in range(3):
        x = torch.randn(256, 64, device="cuda")
        y = torch.randint(0, 10, (256,), device="cuda")
        opt_plain.zero_grad()
        nn.functional.cross_entropy(plain(x), y).backward()
        opt_plain.step()
        opt_trim.zero_grad()
        nn.functional.cross_entropy(trimmed(x), y).backward()
        trimmed.optimizer_step(opt_trim)
    torch.cuda.synchronize()
    stats = trimmed.stats()
    assert stats["fast_peak_used"] <= int(size * 0.4), stats
    assert stats["bytes_moved_up"] > 3 * size, stats
    got = trimmed.copied_state()
    for name, t in plain.named_parameters():
        assert torch.equal(t.detach().cpu(), got[name].cpu()), name


def test_a_state_dict_on_cuda_is_copied_to_the_host_and_loads_back():
    # Copies of what TrimmedModel keeps go to host memory: a copy on the GPU would need the
    # whole model's size there, past the budget.
    from seedance_trim import TrimManager, TrimmedModel
    torch.manual_seed(12)
    model = wide_mlp()
    plain = copy.deepcopy(model).cuda()
    size = model_bytes(model)
    trimmed = TrimmedModel(model, TrimManager.cuda(int(size * 0.4), 2 * size,
                                                   min_victim_bytes=0)).eval()
    x = torch.randn(64, 4096, device="cuda")
    with torch.no_grad():
        want = plain(x)
        assert torch.equal(trimmed(x), want)
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    state = trimmed.model.state_dict()
    # The four 64 MiB weights (tensors under 1 MiB stay on the GPU, where they never move).
    kept = [k for k, v in state.items() if v.numel() * v.element_size() >= 1 << 20]
    assert len(kept) == 4 and all(state[k].device.type == "cpu" for k in kept), kept
    assert torch.cuda.memory_allocated() == before, "no device copies"
    for k, v in plain.state_dict().items():
        assert torch.equal(state[k], v.cpu()), k
    with torch.no_grad():
        for p in plain.parameters():
            p.mul_(0.5)
    trimmed.model.load_state_dict(plain.state_dict())
    with torch.no_grad():
        assert torch.equal(trimmed(x), plain(x))
    assert trimmed.stats()["fast_peak_used"] <= int(size * 0.4)


def test_autocast_training_on_cuda_keeps_no_fp16_weight_copies_and_is_exact():
    # The fp16 copies autocast makes of the four 64 MiB weights (32 MiB each) would stay on
    # the device until the backward pass, outside the budget: none is alive once the forward
    # has returned, and the parameters are plain AMP training's.
    from seedance_trim import TrimManager, TrimmedModel
    from test_trim_torch import train_amp_and_check_copies
    torch.manual_seed(14)
    model = wide_mlp()
    size = model_bytes(model)
    plain = copy.deepcopy(model).cuda()
    trimmed = TrimmedModel(model, TrimManager.cuda(int(size * 0.6), 2 * size,
                                                   min_victim_bytes=0, async_copies=1)).train()
    x = torch.randn(1024, 4096, device="cuda")
    y = torch.randint(0, 10, (1024,), device="cuda")
    # The 3 big layers after the first save their weights (under 1 MiB, weights stay on the
    # GPU and are not counted).
    stats = train_amp_and_check_copies(plain, trimmed, [(x, y)] * 3, "cuda", torch.float16,
                                       0.01, 3, min_numel=1 << 20)
    torch.cuda.synchronize()
    assert stats["weight_casts_redone"] > 0


def test_autocast_inference_on_cuda_leaves_no_fp16_weight_copies_on_the_device():
    # Autocast caches each weight's fp16 copy until its region ends: the four 64 MiB weights'
    # copies would hold 128 MiB of the device outside the budget. Each wrapper's forward hook
    # clears the cache, so a forward adds only its output.
    from seedance_trim import StreamedModel, TrimManager, TrimmedModel
    torch.manual_seed(16)
    model = wide_mlp().eval()
    plain = copy.deepcopy(model).cuda()
    size = model_bytes(model)
    x = torch.randn(64, 4096, device="cuda")
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.float16):
        want = plain(x)
    del plain
    wrappers = {
        "trimmed": TrimmedModel(copy.deepcopy(model), TrimManager.cuda(
            int(size * 0.4), 2 * size, min_victim_bytes=0)).eval(),
        "streamed": StreamedModel(copy.deepcopy(model).cuda(), int(size * 0.4)),
    }
    for name, wrapped in wrappers.items():
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.float16):
            wrapped(x)  # StreamedModel records and plans here (its ring is allocated)
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.float16):
            got = wrapped(x)
            torch.cuda.synchronize()
            added = torch.cuda.memory_allocated() - before  # inside the region
        assert torch.equal(got, want), name
        assert added < 16 << 20, (name, added)
