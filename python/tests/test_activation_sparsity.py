"""TEAL-style activation sparsity on the CPU: thresholds calibrated to a target sparsity reach
it on the calibration data, the gather reference (reading only non-zero rows) equals the dense
masked computation, and the output error stays small at 25-50%."""
import pytest
import torch
from torch import nn

from seedance_prune import activation_sparsity as act
from seedance_prune import datasets, measure, models

torch.set_num_threads(2)


def mlp():
    """GELU, as in the transformer MLPs TEAL targets (after a ReLU half the inputs are zero
    already)."""
    torch.manual_seed(0)
    model = models.MLP((64, 512, 512, 10))
    for i, layer in enumerate(model.net):
        if isinstance(layer, nn.ReLU):
            model.net[i] = nn.GELU()
    return model.eval()


@pytest.mark.parametrize("target", [0.25, 0.4, 0.5])
def test_calibrated_thresholds_reach_the_target_sparsity(target):
    model = mlp()
    layers = act.sparsify(model, ["net.2", "net.4"])
    x = torch.randn(512, 64)
    act.calibrate_thresholds(model, layers, x, sparsity=target)
    with torch.no_grad():
        model(x)
    for layer in layers:
        assert abs(layer.sparsity() - target) < 0.01, (layer.name, layer.sparsity())


@torch.no_grad()
def test_gather_reference_equals_the_dense_masked_computation():
    model = mlp()
    layers = act.sparsify(model, ["net.2", "net.4"])
    act.calibrate_thresholds(model, layers, torch.randn(256, 64), sparsity=0.5)
    x = torch.randn(3, 64)
    for layer in layers:
        layer.mode = "dense"
    dense = model(x)
    for layer in layers:
        layer.mode = "gather"
    gathered = model(x)
    assert torch.allclose(gathered, dense, rtol=1e-5, atol=1e-6), (gathered - dense).abs().max()


def test_on_digits_accuracy_holds_and_the_error_grows_with_sparsity():
    tx, ty, vx, vy = datasets.digits()
    model = mlp()
    measure.train(model, tx, ty, epochs=10)
    dense_accuracy = measure.accuracy(model, vx, vy)
    with torch.no_grad():
        full = model(vx)
    layers = act.sparsify(model, ["net.2", "net.4"])
    errors = []
    for target in (0.25, 0.4, 0.5):
        act.calibrate_thresholds(model, layers, tx[:300], sparsity=target)
        with torch.no_grad():
            errors.append(((model(vx) - full).norm() / full.norm()).item())
        assert abs(measure.accuracy(model, vx, vy) - dense_accuracy) <= 1.0, target
    assert errors == sorted(errors) and errors[0] < 0.05
    act.calibrate_thresholds(model, layers, tx[:300], sparsity=0.0)
    with torch.no_grad():
        assert torch.equal(model(vx), full)


def test_only_linear_layers_are_wrapped():
    with pytest.raises(TypeError, match="'net.1' is GELU, not nn.Linear"):
        act.sparsify(mlp(), ["net.1"])


@torch.no_grad()
def test_gather_follows_a_weight_changed_after_wrapping():
    model = mlp()
    layers = act.sparsify(model, ["net.2"])
    act.calibrate_thresholds(model, layers, torch.randn(256, 64), sparsity=0.4)
    layers[0].mode = "gather"
    x = torch.randn(2, 64)
    model(x)
    model.net[2].linear.weight.mul_(2.0)  # fine-tuned, or loaded, after wrapping
    gathered = model(x)
    layers[0].mode = "dense"
    assert torch.allclose(gathered, model(x), rtol=1e-5, atol=1e-6)
