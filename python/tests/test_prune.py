"""seedance_prune on the CPU (Debian's torch 1.13): pruned models are really smaller by what the
ratio says, compute what a channel-masked copy of the original computes, unsupported layers are
refused by name, the zero-code forms prune, accuracy holds on digits after fine-tuning and in
bf16 and int8, and the selector picks from recorded profiles."""
import copy
import json
import os

import pytest
import torch
import torchvision
from torch import nn

import seedance_prune as sp
from seedance_prune import datasets, measure, models
from seedance_prune.groups import PruneError

torch.set_num_threads(2)
DATA = os.path.join(os.path.dirname(__file__), "data")


def seeded(fn, *args, **kwargs):
    torch.manual_seed(0)
    return fn(*args, **kwargs).eval()


# --- sizes: what the ratio implies, computed from the architecture alone -----------------------

def expected_params(model, ratio, first_conv, last_linear):
    """Every channel is pruned by `ratio` except the image's and the logits': a convolution or
    linear layer between two pruned spaces keeps (1-r)² of its weights, the first and the last
    layer (1-r), a normalisation or depthwise filter (1-r), the last bias all of it."""
    k = 1.0 - ratio
    total = 0.0
    for name, p in model.named_parameters():
        layer = name.rpartition(".")[0]
        if layer == last_linear:
            total += p.numel() * (k if name.endswith("weight") else 1.0)
        elif layer == first_conv or p.dim() == 1:
            total += p.numel() * k
        elif p.dim() == 4 and p.shape[1] == 1:  # depthwise
            total += p.numel() * k
        else:
            total += p.numel() * k * k
    return total


@pytest.mark.parametrize("arch,ratio,first,last", [
    ("resnet18", 0.5, "conv1", "fc"), ("resnet18", 0.3, "conv1", "fc"),
    ("resnet50", 0.5, "conv1", "fc"), ("mobilenet_v2", 0.5, "features.0.0", "classifier.1")])
def test_torchvision_models_shrink_by_the_ratio_and_run(arch, ratio, first, last):
    model = seeded(getattr(torchvision.models, arch))
    want = expected_params(model, ratio, first, last)
    x = torch.randn(2, 3, 64, 64)
    sp.prune(model, x[:1], ratio=ratio)
    got = sp.count_parameters(model)
    assert abs(got - want) / want < 0.01, (got, want)
    assert model(x).shape == (2, 1000)
    rep = sp.report(model)
    assert [g.describe() for g in rep.frozen] == [f"1000 channels: {last}.out"]


def test_pruned_layers_describe_their_new_sizes():
    model = seeded(torchvision.models.resnet18)
    sp.prune(model, torch.randn(1, 3, 64, 64), ratio=0.5)
    assert (model.conv1.out_channels, model.bn1.num_features) == (32, 32)
    assert model.layer4[1].conv2.weight.shape == (256, 256, 3, 3)
    assert model.fc.in_features == 256 and model.fc.weight.shape == (1000, 256)


def test_concatenation_slices_each_part_at_its_offset():
    model = seeded(CatNet)
    sp.prune(model, torch.randn(1, 3, 8, 8), ratio=0.5)
    assert (model.a.out_channels, model.b.out_channels) == (4, 3)
    assert model.bn.num_features == 3 + 4 + 3 and model.c.in_channels == 3 + 4 + 3


def test_mlp_hidden_units_shrink_exactly():
    model = seeded(models.MLP, (64, 200, 100, 10))
    sp.prune(model, torch.randn(1, 64), ratio=0.4)
    assert [m.weight.shape for m in model.net if isinstance(m, nn.Linear)] == \
        [(120, 64), (60, 120), (10, 60)]
    assert sp.count_parameters(model) == 120 * 64 + 120 + 60 * 120 + 60 + 10 * 60 + 10


def test_vit_block_prunes_heads_mlp_and_width():
    model = seeded(models.TinyViT, image=28, patch=7, dim=64, heads=4)
    x = torch.randn(2, 1, 28, 28)
    sp.prune(model, x[:1], ratio=0.5)
    attn = model.blocks[0].attn
    assert attn.num_heads == 2 and attn.in_proj_weight.shape == (3 * 2 * 16, 32)
    assert model.blocks[0].mlp[0].weight.shape == (128, 32)
    assert model.pos.shape == (1, 16, 32) and model.norm.weight.shape == (32,)
    assert model(x).shape == (2, 10)


def test_ratio_zero_is_bit_exact():
    model = seeded(torchvision.models.resnet18)
    before = copy.deepcopy(model)
    x = torch.randn(2, 3, 64, 64)
    sp.prune(model, x, ratio=0.0)
    assert all(torch.equal(a, b) for a, b in
               zip(before.state_dict().values(), model.state_dict().values()))
    with torch.no_grad():
        assert torch.equal(before(x), model(x))


# --- the channel-masked oracle --------------------------------------------------------------

def masked_oracle(original, report):
    """`original` with every removed channel's readers zeroed: each consumer's input columns, an
    attention's output-projection columns of removed heads. Dense, same sizes as before."""
    oracle = copy.deepcopy(original)
    with torch.no_grad():
        for g in report.pruned:
            gone = sorted(set(range(g.size)) - set(g.keep))
            for m in g.members:
                layer = oracle.get_submodule(m.module_name)
                cols = [m.offset + c * m.repeat + j for c in gone for j in range(m.repeat)]
                if m.role == "in":
                    layer.weight[:, cols] = 0
                elif m.role == "attn_in":
                    layer.in_proj_weight[:, cols] = 0
                elif m.role == "heads":
                    layer.out_proj.weight[:, cols] = 0
                elif m.role == "norm":
                    assert isinstance(layer, nn.modules.batchnorm._BatchNorm), \
                        "a LayerNorm over pruned channels has no masked equivalent"
    return oracle


class CatNet(nn.Module):
    """Concatenations: with the input image (channels of no space) and of two branches, then a
    BatchNorm over the concatenation."""

    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(3, 6, 1)
        self.bn = nn.BatchNorm2d(3 + 8 + 6)
        self.c = nn.Conv2d(3 + 8 + 6, 4, 1)

    def forward(self, x):
        return self.c(torch.relu(self.bn(torch.cat([x, self.a(x), self.b(x)], dim=1))))


@pytest.mark.parametrize("build,shape,ignore", [
    (lambda: torchvision.models.resnet18(), (2, 3, 64, 64), ()),
    (lambda: torchvision.models.densenet121(), (1, 3, 64, 64), ()),
    (lambda: CatNet(), (2, 3, 8, 8), ()),
    (lambda: torchvision.models.mobilenet_v2(), (2, 3, 64, 64), ()),
    (lambda: models.SmallCNN(), (4, 1, 8, 8), ()),
    (lambda: models.MLP(), (4, 64), ()),
    (lambda: models.TinyViT(image=28, patch=7), (2, 1, 28, 28), ("norm", "blocks.0.norm1",
                                                                "blocks.0.norm2",
                                                                "blocks.1.norm1",
                                                                "blocks.1.norm2")),
], ids=["resnet18", "densenet121", "cat", "mobilenet_v2", "small_cnn", "mlp",
        "vit_heads_and_mlp"])
def test_pruned_model_equals_channel_masked_oracle(build, shape, ignore):
    torch.manual_seed(0)
    model = build().eval()
    for m in model.modules():  # non-trivial BatchNorm statistics
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 2.0)
    original = copy.deepcopy(model)
    x = torch.randn(*shape)
    sp.prune(model, x[:1], ratio=0.5, ignore=ignore)
    rep = sp.report(model)
    assert rep.pruned and rep.params_after < rep.params_before
    oracle = masked_oracle(original, rep)
    with torch.no_grad():
        want, got = oracle(x), model(x)
        assert not torch.allclose(original(x), want, atol=1e-3), "the mask changed nothing"
    assert torch.allclose(got, want, atol=1e-5, rtol=0), (got - want).abs().max()


# --- what is refused -------------------------------------------------------------------------

class Wrap(nn.Module):
    def __init__(self, *layers):
        super().__init__()
        self.body = nn.Sequential(*layers)

    def forward(self, x):
        return self.body(x)


@pytest.mark.parametrize("layers,named", [
    ([nn.Conv2d(3, 8, 3), nn.GroupNorm(2, 8), nn.Conv2d(8, 4, 3)], "'body.1' (GroupNorm)"),
    ([nn.Conv2d(3, 8, 3), nn.ConvTranspose2d(8, 4, 3)], "'body.1' (ConvTranspose2d)"),
    ([nn.Conv2d(3, 8, 3), nn.Conv2d(8, 8, 3, groups=2)], "'body.1' (Conv2d, groups=2)"),
    ([nn.Conv2d(3, 8, 3), nn.InstanceNorm2d(8, affine=True)], "'body.1' (InstanceNorm2d)"),
])
def test_unsupported_layers_are_refused_by_name(layers, named):
    model = Wrap(*layers)
    with pytest.raises(PruneError, match=named.replace("(", r"\(").replace(")", r"\)")):
        sp.prune(model, torch.randn(1, 3, 16, 16), ratio=0.5)


def test_an_ignored_unsupported_layer_is_kept_and_the_rest_pruned():
    model = Wrap(nn.Conv2d(3, 8, 3), nn.GroupNorm(2, 8), nn.Conv2d(8, 8, 3), nn.ReLU(),
                 nn.Conv2d(8, 4, 3))
    sp.prune(model, torch.randn(1, 3, 16, 16), ratio=0.5, ignore=[model.body[1]])
    assert model.body[0].out_channels == 8  # feeds the ignored GroupNorm
    assert model.body[2].out_channels == 4
    assert model(torch.randn(1, 3, 16, 16)).shape == (1, 4, 10, 10)


class Shared(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 8)
        self.b = nn.Linear(8, 2)

    def forward(self, x):
        return self.b(self.a(self.a(x)))


def test_a_layer_called_twice_is_refused():
    with pytest.raises(PruneError, match="'a' .*called more than once"):
        sp.prune(Shared(), torch.randn(1, 8), ratio=0.5)


def test_example_inputs_that_do_not_fit_say_where():
    with pytest.raises(PruneError, match=r"MLP does not run on the example inputs \(at 'net.0'\)"
                                         r": mat1 and mat2 shapes cannot be multiplied"):
        sp.prune(models.MLP(), torch.randn(1, 32))


def test_arguments_are_checked():
    for bad in (1.0, -0.1, 1.5):
        with pytest.raises(PruneError, match="fraction of channels removed"):
            sp.prune(models.MLP(), torch.randn(1, 64), ratio=bad)
    with pytest.raises(PruneError, match="importance must be one of"):
        sp.prune(models.MLP(), torch.randn(1, 64), importance="random")


def test_an_unknown_operation_keeps_its_channels_and_says_so():
    class Odd(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(8, 16), nn.Linear(16, 2)

        def forward(self, x):
            return self.b(torch.cumsum(self.a(x), dim=-1))

    model = Odd()
    with pytest.warns(UserWarning, match="could not follow"):
        sp.prune(model, torch.randn(1, 8), ratio=0.5)
    assert model.a.out_features == 16


def test_pooling_over_channels_keeps_them():
    class ChannelsLast(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.pool, self.b = nn.Conv2d(3, 8, 1), nn.MaxPool2d(2), nn.Linear(4, 2)

        def forward(self, x):  # pools over (W, C) of an N, H, W, C tensor
            return self.b(self.pool(self.a(x).permute(0, 2, 3, 1)))

    model = ChannelsLast()
    sp.prune(model, torch.randn(1, 3, 4, 4), ratio=0.5)
    assert model.a.out_channels == 8
    assert any("pools over the channels" in n for n in sp.report(model).notes)


def test_round_to_keeps_multiples():
    model = models.MLP((64, 100, 10))
    sp.prune(model, torch.randn(1, 64), ratio=0.5, round_to=8)
    assert model.net[0].out_features == 56  # 50 rounded up to a multiple of 8


def test_importance_ranks_channels():
    model = models.MLP((4, 6, 2))
    with torch.no_grad():
        model.net[0].weight.copy_(torch.arange(6.0).unsqueeze(1).repeat(1, 4))
        model.net[0].bias.zero_()
        model.net[2].weight.fill_(0.1)
    sp.prune(model, torch.randn(1, 4), ratio=0.5, importance="l2")
    assert model.net[0].weight[:, 0].tolist() == [3.0, 4.0, 5.0]


# --- zero-code forms -------------------------------------------------------------------------

def test_decorator_prunes_at_the_first_call_after_calibration():
    @sp.channelwise(ratio=0.5, calibration_calls=2)
    class Net(models.MLP):
        pass

    net = Net((64, 64, 10))
    x = torch.randn(3, 64)
    for _ in range(2):
        net(x)
        assert sp.report(net) is None and net.net[0].out_features == 64
    assert net(x).shape == (3, 10)
    assert net.net[0].out_features == 32 and sp.report(net).ratio == 0.5
    net(x)
    assert net.net[0].out_features == 32  # once only


def test_decorator_around_forward():
    class Net(models.MLP):
        @sp.channelwise(ratio=0.25)
        def forward(self, x):
            return self.net(x)

    net = Net((64, 64, 10))
    assert net(torch.randn(2, 64)).shape == (2, 10) and net.net[0].out_features == 48


def test_decorator_refuses_what_is_not_a_module_class_or_forward():
    with pytest.raises(PruneError, match="decorates an nn.Module class or its forward"):
        sp.channelwise()(lambda x: x)


def test_context_form_with_taylor_importance():
    model = models.MLP((64, 64, 10))
    x, y = torch.randn(16, 64), torch.randint(0, 10, (16,))
    with sp.pruning(model, ratio=0.25, importance="taylor") as session:
        nn.functional.cross_entropy(model(x), y).backward()
    assert model.net[0].out_features == 48
    assert "pruned 1 of 2 channel groups" in session.report.summary()


def test_taylor_without_gradients_says_what_to_do():
    with pytest.raises(PruneError, match="needs gradients: run a backward pass"):
        sp.prune(models.MLP(), torch.randn(1, 64), importance="taylor")


# --- accuracy on digits ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def digits_cnn():
    tx, ty, vx, vy = datasets.digits()
    torch.manual_seed(0)
    model = measure.train(models.SmallCNN(), tx, ty, epochs=8)
    return model, (tx, ty, vx, vy), measure.accuracy(model, vx, vy)


def test_digits_cnn_is_accurate(digits_cnn):
    assert digits_cnn[2] >= 95.0


def test_pruned_half_and_fine_tuned_loses_at_most_two_points(digits_cnn):
    model, (tx, ty, vx, vy), dense = digits_cnn
    pruned = copy.deepcopy(model)
    sp.prune(pruned, vx[:1], ratio=0.5)
    assert measure.macs(pruned, vx[:1]) * 2 <= measure.macs(model, vx[:1])
    measure.train(pruned, tx, ty, epochs=2, lr=1e-3)
    assert measure.accuracy(pruned, vx, vy) >= dense - 2.0


def test_bf16_and_dynamic_int8_stay_within_a_point(digits_cnn):
    model, (_, _, vx, vy), dense = digits_cnn
    bf16 = copy.deepcopy(model).to(torch.bfloat16)
    assert abs(measure.accuracy(bf16, vx, vy, dtype=torch.bfloat16) - dense) <= 1.0
    int8 = torch.quantization.quantize_dynamic(copy.deepcopy(model), {nn.Linear},
                                               dtype=torch.qint8)
    assert isinstance(int8.head[1], torch.nn.quantized.dynamic.Linear)
    assert measure.model_bytes(int8) < measure.model_bytes(model)
    assert abs(measure.accuracy(int8, vx, vy) - dense) <= 1.0


# --- the selector ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def recorded():
    return sp.load_profiles(os.path.join(DATA, "prune_profiles_cpu.json"))


def test_selector_picks_the_most_accurate_that_fits(recorded):
    loose = sp.select(recorded)
    assert loose["accuracy"] == max(p["accuracy"] for p in recorded)
    smallest = min(p["memory_mb"] for p in recorded)
    pick = sp.select(recorded, memory_mb=smallest)
    assert pick["memory_mb"] == smallest
    p99 = sorted(p["latency_p99_ms"] for p in recorded)[len(recorded) // 2]
    pick = sp.select(recorded, latency_p99_ms=p99, min_accuracy=90)
    fits = [p for p in recorded if p["latency_p99_ms"] <= p99 and p["accuracy"] >= 90]
    assert pick["accuracy"] == max(p["accuracy"] for p in fits)


def test_selector_names_the_constraint_that_failed(recorded):
    fastest = min(p["latency_p99_ms"] for p in recorded)
    with pytest.raises(sp.NoConfigFits, match="failed on latency_p99_ms") as e:
        sp.select(recorded, latency_p99_ms=fastest / 10)
    assert e.value.failures["latency_p99_ms"] == len(recorded)
    with pytest.raises(sp.NoConfigFits, match="failed on accuracy"):
        sp.select(recorded, min_accuracy=100.1)
    with pytest.raises(sp.NoConfigFits, match="failed on memory_mb, accuracy"):
        sp.select(recorded, memory_mb=0.001, min_accuracy=100.1)
    with pytest.raises(sp.NoConfigFits, match="no profiles"):
        sp.select([])


def test_selector_energy_budget_needs_energy_in_the_profiles(recorded):
    with pytest.raises(ValueError, match="has no 'energy_mj'"):
        sp.select(recorded, energy_mj=10)
    with_energy = [dict(p, energy_mj=p["latency_p50_ms"] * 15) for p in recorded]
    pick = sp.select(with_energy, energy_mj=min(p["energy_mj"] for p in with_energy))
    assert pick["energy_mj"] == min(p["energy_mj"] for p in with_energy)


def test_device_budgets_are_data():
    budget = sp.device_budget("jetson-orin-nano-7w")
    assert set(budget) == {"latency_p99_ms", "memory_mb", "energy_mj", "min_accuracy"}
    with pytest.raises(KeyError, match="known: a10g-like-150w"):
        sp.device_budget("toaster")


# --- the autograd graph, where torch.fx does not trace ---------------------------------------

@pytest.mark.parametrize("build,shape", [
    (lambda: torchvision.models.resnet18(), (1, 3, 64, 64)),
    (lambda: torchvision.models.mobilenet_v2(), (1, 3, 64, 64)),
    (lambda: torchvision.models.densenet121(), (1, 3, 64, 64)),
    (lambda: models.SmallCNN(), (1, 1, 8, 8)),
    (lambda: models.TinyViT(), (1, 1, 28, 28)),
], ids=["resnet18", "mobilenet_v2", "densenet121", "small_cnn", "vit"])
def test_autograd_graph_prunes_as_fx_does(build, shape):
    torch.manual_seed(0)
    by_fx = build().eval()
    by_autograd = copy.deepcopy(by_fx)
    x = torch.randn(*shape)
    sp.prune(by_fx, x, ratio=0.5, tracer="fx")
    sp.prune(by_autograd, x, ratio=0.5, tracer="autograd")
    a, b = by_fx.state_dict(), by_autograd.state_dict()
    assert list(a) == list(b) and all(torch.equal(a[k], b[k]) for k in a)
    assert [g.describe() for g in sp.report(by_fx).groups] == \
        [g.describe() for g in sp.report(by_autograd).groups]


class Branchy(nn.Module):
    """Data-dependent control flow: torch.fx cannot trace it."""

    def __init__(self):
        super().__init__()
        self.a, self.b, self.c = nn.Linear(16, 32), nn.Linear(32, 32), nn.Linear(32, 4)

    def forward(self, x):
        h = torch.relu(self.a(x))
        if h.sum() > 0:
            h = h + torch.relu(self.b(h))
        return self.c(h)


def test_a_model_fx_cannot_trace_is_pruned_from_its_autograd_graph():
    model, x = Branchy(), torch.randn(2, 16)
    with pytest.raises(PruneError, match="does not trace with torch.fx.*tracer='autograd'"):
        sp.prune(copy.deepcopy(model), x, ratio=0.5, tracer="fx")
    sp.prune(model, x, ratio=0.5)
    assert (model.a.out_features, model.b.out_features, model.c.in_features) == (16, 16, 16)
    assert any("recorded from autograd" in n for n in sp.report(model).notes)
    assert model(x).shape == (2, 4)


def test_autograd_graph_keeps_what_it_cannot_follow():
    class Odd(Branchy):
        def forward(self, x):
            return self.c(torch.cumsum(self.b(self.a(x)), dim=-1))

    model = Odd()
    with pytest.warns(UserWarning, match="could not follow"):
        sp.prune(model, torch.randn(1, 16), ratio=0.5, tracer="autograd")
    assert model.a.out_features == 16 and model.b.out_features == 32


def test_buffers_outside_layers_keep_their_channels_in_both_graphs():
    class Offset(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(8, 16), nn.Linear(16, 2)
            self.register_buffer("shift", torch.zeros(16))

        def forward(self, x):
            return self.b(self.a(x) + self.shift)

    for tracer in ("fx", "autograd"):
        model = Offset()
        sp.prune(model, torch.randn(1, 8), ratio=0.5, tracer=tracer)
        assert model.a.out_features == 16 and not model.shift.requires_grad, tracer


def test_a_coupling_no_tracer_saw_fails_loudly_at_pruning():
    class Offset(nn.Module):  # a tensor made in forward: autograd's graph does not show it
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(8, 16), nn.Linear(16, 2)

        def forward(self, x):
            return self.b(self.a(x) + torch.linspace(0, 1, 16))

    with pytest.raises(PruneError, match="no longer runs on the example inputs"):
        sp.prune(Offset(), torch.randn(1, 8), ratio=0.5, tracer="autograd")
    fx_model = Offset()
    sp.prune(fx_model, torch.randn(1, 8), ratio=0.5, tracer="fx")
    assert fx_model.a.out_features == 16  # fx sees the tensor and keeps the channels
