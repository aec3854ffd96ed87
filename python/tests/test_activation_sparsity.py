"""TEAL-style activation sparsity on the CPU: thresholds calibrated to a target sparsity reach
it on the calibration data, the gather reference (reading only non-zero rows) equals the dense
masked computation, and the output error stays small at 25-50%."""
import pytest
import torch
from torch import nn

from seedance_prune import activation_sparsity as act
from seedance_prune import datasets, measure, models, sparse_gemv

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


def test_kernel_mode_without_a_device_kernel_is_the_gather_reference():
    """On the CPU (or without Triton) "kernel" falls back to the gather reference."""
    torch.manual_seed(3)
    mlp = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 16)).eval()
    layers = act.sparsify(mlp, ["2"])
    act.calibrate_thresholds(mlp, layers, torch.randn(128, 32), sparsity=0.4)
    x = torch.randn(1, 32)
    layers[0].mode = "gather"
    with torch.no_grad():
        gathered = mlp(x)
    layers[0].mode = "kernel"
    with torch.no_grad():
        assert torch.equal(mlp(x), gathered)


KERNEL_OK, KERNEL_WHY = sparse_gemv.available("cuda")


@pytest.mark.skipif(not KERNEL_OK, reason=KERNEL_WHY)
@pytest.mark.parametrize("zero_fraction", [0.0, 0.25, 0.5, 0.9, 1.0])
def test_triton_kernel_equals_the_dense_product(zero_fraction):
    """On the GPU machine: sparse_gemv reads only the non-zero rows and equals x @ W^T, odd
    sizes included (masked tails in both dimensions)."""
    torch.manual_seed(7)
    k, n = 1000, 300
    weight_t = torch.randn(k, n, device="cuda")
    x = torch.randn(k, device="cuda")
    x[torch.rand(k, device="cuda") < zero_fraction] = 0
    y = sparse_gemv.sparse_gemv(x, weight_t)
    expected = x @ weight_t
    assert torch.allclose(y, expected, rtol=1e-4, atol=1e-3)


@pytest.mark.skipif(not KERNEL_OK, reason=KERNEL_WHY)
def test_kernel_mode_on_the_device_matches_dense():
    torch.manual_seed(5)
    mlp = nn.Sequential(nn.Linear(256, 1024), nn.GELU(), nn.Linear(1024, 256)).eval().cuda()
    layers = act.sparsify(mlp, ["2"])
    act.calibrate_thresholds(mlp, layers, torch.randn(256, 256, device="cuda"), sparsity=0.5)
    x = torch.randn(1, 256, device="cuda")
    with torch.no_grad():
        layers[0].mode = "dense"
        dense = mlp(x)
        layers[0].mode = "kernel"
        kernel = mlp(x)
    assert torch.allclose(kernel, dense, rtol=1e-4, atol=1e-4)
