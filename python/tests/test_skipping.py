"""Block skipping decided before the block runs: a skipped block's output is exactly the model
without it, per sample; the budget caps skips even at batch 1; the threshold calibrated on
held-out data skips the fraction asked; on digits the gate beats random skipping."""
import copy

import pytest
import torch
from torch import nn

from seedance_prune import datasets, measure, models, skipping

torch.set_num_threads(2)


def cnn(blocks=3):
    torch.manual_seed(0)
    model = models.SmallCNN(width=8, blocks=blocks).eval()
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.3, 0.3)
            m.running_var.uniform_(0.5, 1.5)
    return model


def without(model, names):
    other = copy.deepcopy(model)
    for name in names:
        parent, _, attr = name.rpartition(".")
        setattr(other.get_submodule(parent), attr, nn.Identity())
    return other


@torch.no_grad()
def test_a_skipped_block_gives_exactly_the_model_without_it():
    model = cnn()
    reference = without(model, ["blocks.1"])
    blocks = skipping.skippable(model, ["blocks.0", "blocks.1", "blocks.2"])
    blocks[1].mode = "always"
    x = torch.randn(5, 1, 8, 8)
    assert torch.equal(model(x), reference(x))
    assert skipping.skip_stats(blocks)["per_block"] == {"blocks.0": 0.0, "blocks.1": 1.0,
                                                         "blocks.2": 0.0}


@torch.no_grad()
def test_transformer_blocks_skip_to_the_model_without_them():
    torch.manual_seed(0)
    model = models.TinyViT().eval()
    reference = without(model, ["blocks.0"])
    blocks = skipping.skippable(model, ["blocks.0", "blocks.1"])
    blocks[0].mode = "always"
    x = torch.randn(3, 1, 28, 28)
    assert torch.equal(model(x), reference(x))


@torch.no_grad()
def test_each_sample_skips_on_its_own():
    model = cnn()
    full, reduced = copy.deepcopy(model), without(model, ["blocks.2"])
    blocks = skipping.skippable(model, ["blocks.2"])
    blocks[0].mode = "gate"
    x = torch.randn(16, 1, 8, 8)
    harm = blocks[0].predicted_harm  # a gate that skips the samples whose first pixel is < 0
    blocks[0].predicted_harm = lambda inp: torch.zeros(len(inp))
    blocks[0].threshold = 0.5
    skip = x[:, 0, 0, 0] < 0
    blocks[0].wants_skip = lambda inp: (skip.clone(), None)
    out = model(x)
    blocks[0].predicted_harm = harm
    assert 0 < int(skip.sum()) < 16
    assert torch.allclose(out[skip], reduced(x)[skip], atol=1e-5)
    assert torch.allclose(out[~skip], full(x)[~skip], atol=1e-5)


@torch.no_grad()
def test_the_budget_caps_skips_even_at_batch_one():
    model = cnn(blocks=1)
    blocks = skipping.skippable(model, ["blocks.0"])
    skipping.set_mode(blocks, "always", budget=0.25)
    x = torch.randn(1, 1, 8, 8)
    for i in range(1, 101):
        model(x)
        assert blocks[0].skipped <= 0.25 * i
    assert blocks[0].skipped == 25
    skipping.set_mode(blocks, "always", budget=0.25)
    model(torch.randn(40, 1, 8, 8))
    assert blocks[0].skipped == 10


def test_training_mode_runs_every_block():
    model = cnn(blocks=1)
    plain = copy.deepcopy(model).train()
    blocks = skipping.skippable(model, ["blocks.0"])
    skipping.set_mode(blocks, "always")
    model.train()
    x = torch.randn(4, 1, 8, 8)
    assert torch.equal(model(x), plain(x))
    assert blocks[0].seen == 0


def test_calibration_skips_the_fraction_asked_on_its_data():
    model = cnn()
    blocks = skipping.skippable(model, ["blocks.0", "blocks.1", "blocks.2"])
    x, y = torch.randn(400, 1, 8, 8), torch.randint(0, 10, (400,))
    skipping.calibrate(model, blocks, x, y, skip_fraction=0.3, budget=1.0)
    with torch.no_grad():
        model(x)
    for fraction in skipping.skip_stats(blocks)["per_block"].values():
        assert abs(fraction - 0.3) <= 0.02
    with pytest.raises(skipping.SkipError, match="skip_fraction must be in"):
        skipping.calibrate(model, blocks, x, y, skip_fraction=1.0)


def test_on_digits_the_gate_keeps_accuracy_and_beats_random_skipping():
    tx, ty, vx, vy = datasets.digits()
    torch.manual_seed(0)
    model = models.SmallCNN(blocks=4)
    blocks = skipping.skippable(model, [f"blocks.{i}" for i in range(4)])
    for b in blocks:
        b.train_drop = 0.2
    measure.train(model, tx[300:], ty[300:], epochs=10)
    skipping.set_mode(blocks, "never")
    full = measure.accuracy(model, vx, vy)
    skipping.calibrate(model, blocks, tx[:300], ty[:300], skip_fraction=0.2)
    gated = measure.accuracy(model, vx, vy)
    skipped = skipping.skip_stats(blocks)["skipped"]
    skipping.set_mode(blocks, "random", rate=skipped)
    random_skips = measure.accuracy(model, vx, vy)
    assert 0.15 <= skipped <= 0.2
    assert gated >= full - 1.0
    assert gated >= random_skips
