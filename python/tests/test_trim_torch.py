"""seedance_trim's PyTorch integration on the CPU (Debian's python3-torch): models run under
TrimmedModel with a fast-tier budget below their size give bit-for-bit the plain model's
outputs, the fast tier never goes above its budget, and layers really move."""
import copy

import pytest
import torch
import torchvision
from torch import nn

from seedance_trim import TrimError, TrimManager, TrimmedModel

torch.manual_seed(0)
torch.set_num_threads(2)


def model_bytes(model):
    return sum(t.numel() * t.element_size()
               for t in list(model.parameters()) + list(model.buffers()))


class SmallTransformer(nn.Module):
    """A token classifier: embedding, 4 encoder layers (PyTorch's fused fast path in eval
    mode reads the layers' weights without calling their submodules), a linear head."""

    def __init__(self, vocab=4000, d=128, layers=4):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        layer = nn.TransformerEncoderLayer(d, nhead=4, dim_feedforward=4 * d, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d, vocab)

    def forward(self, tokens):
        return self.head(self.encoder(self.embed(tokens)))


def run_both(model, inputs, budget_share, iterations=2):
    plain = copy.deepcopy(model).eval()
    size = model_bytes(model)
    budget = int(size * budget_share)
    manager = TrimManager.host(budget, 2 * size, min_victim_bytes=0)
    trimmed = TrimmedModel(model.eval(), manager)
    with torch.no_grad():
        for _ in range(iterations):
            expected = plain(inputs)
            got = trimmed(inputs)
            assert torch.equal(expected, got), "outputs differ from the plain model's"
    return size, budget, trimmed.stats()


def test_resnet50_under_a_budget_below_its_size_gives_the_same_outputs():
    size, budget, s = run_both(torchvision.models.resnet50(), torch.randn(1, 3, 128, 128), 0.4)
    assert budget < size
    assert s["fast_peak_used"] <= budget
    assert s["fast_capacity"] == budget
    assert s["stalls"] > 0 and s["bytes_moved_up"] > 0 and s["bytes_moved_down"] > 0
    assert s["step"] == 2  # one step per iteration


def test_small_transformer_under_a_budget_below_its_size_gives_the_same_outputs():
    tokens = torch.randint(0, 4000, (2, 32))
    size, budget, s = run_both(SmallTransformer(), tokens, 0.35)
    assert s["fast_peak_used"] <= budget < size
    assert s["stalls"] > 0 and s["bytes_moved_up"] > 0


def test_weights_written_under_all_acquired_are_what_later_forwards_use():
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 10))
    other = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 10)).eval()
    size = model_bytes(model)
    manager = TrimManager.host(size + (64 << 10), 2 * size, min_victim_bytes=0)  # page rounding
    trimmed = TrimmedModel(model.eval(), manager)
    x = torch.randn(4, 256)
    with torch.no_grad():
        trimmed(x)
        with trimmed.all_acquired():  # e.g. loading a fine-tuned state dict
            for dst, src in zip(trimmed.model.parameters(), other.parameters()):
                dst.copy_(src)
        manager.step()
        assert manager.trim() >= 1  # the new weights go down a tier ...
        assert torch.equal(trimmed(x), other(x))  # ... and come back as written
    assert trimmed.stats()["bytes_moved_down"] > 0


def test_a_moved_layer_comes_back_and_maps_to_its_buffer():
    model = nn.Sequential(nn.Linear(512, 512), nn.Linear(512, 512), nn.Linear(512, 512))
    size = model_bytes(model)
    manager = TrimManager.host(size // 2, 2 * size, min_victim_bytes=0)
    trimmed = TrimmedModel(model, manager)
    with torch.no_grad():
        trimmed(torch.randn(1, 512))
    tiers = [manager.tier_of(b) for b in trimmed._ids.values()]
    assert 1 in tiers  # something was moved to the slower tier
    weight = model[0].weight
    bid = manager.lookup(weight.data_ptr())
    assert manager.lookup(weight.data_ptr() + weight.numel() * 4 - 1) == bid
    with pytest.raises(TrimError) as e:
        manager.acquire(10 ** 9)
    assert "unknown buffer" in str(e.value)


def test_zero_rows_cross_through_the_zero_block_codec():
    """A model whose layers lost half their output rows to a pruning mask (zeroed, not sliced):
    with the zero-block codec only the kept rows move, the outputs stay exact."""
    model = nn.Sequential(*[nn.Sequential(nn.Linear(512, 512), nn.ReLU()) for _ in range(6)])
    with torch.no_grad():
        for block in model:
            block[0].weight[1::2] = 0  # every other output row: 2 KiB of zeros each
    plain = copy.deepcopy(model).eval()
    size = model_bytes(model)
    manager = TrimManager.host(int(size * 0.4), 2 * size, min_victim_bytes=0)
    trimmed = TrimmedModel(model.eval(), manager, codec="zero_blocks_always")
    inputs = torch.randn(4, 512)
    with torch.no_grad():
        for _ in range(3):
            assert torch.equal(plain(inputs), trimmed(inputs))
    stats = trimmed.stats()
    assert stats["bytes_moved_encoded"] > 0, stats
    # The weights are nearly all of the bytes; half of each is zero rows.
    saved = stats["bytes_codec_saved"] / stats["bytes_moved_encoded"]
    assert 0.4 < saved < 0.5, stats
    assert stats["fast_peak_used"] <= int(size * 0.4)
    with pytest.raises(ValueError, match="codec"):
        manager.register(1024, codec="lz4")

