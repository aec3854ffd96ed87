"""seedance_trim's PyTorch integration on the CPU (Debian's python3-torch): models run under
TrimmedModel with a fast-tier budget below their size give bit-for-bit the plain model's
outputs, the fast tier never goes above its budget, and layers really move."""
import copy

import pytest
import torch
import torchvision
from torch import nn

from seedance_trim import TrimError, TrimManager, TrimmedModel, optimizer_guard

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



# ---- StreamedModel: weight streaming on the CPU backend (issue 41) ----

def stream_both(model, inputs, budget_share, forwards=3):
    from seedance_trim import StreamedModel
    plain = copy.deepcopy(model).eval()
    size = model_bytes(model)
    streamed = StreamedModel(model.eval(), int(size * budget_share))
    with torch.no_grad():
        for _ in range(forwards):
            assert torch.equal(plain(inputs), streamed(inputs)), "outputs differ"
    return size, streamed


def test_resnet50_streams_under_forty_percent_with_the_same_outputs():
    size, streamed = stream_both(torchvision.models.resnet50(), torch.randn(2, 3, 64, 64), 0.4)
    plan, stats = streamed.plan(), streamed.stats()
    assert plan["resident_bytes"] + plan["ring_bytes"] <= int(size * 0.4), plan
    assert 0 < plan["streamed_bytes"] == size - plan["resident_bytes"], plan
    # Two streaming forwards after the recording one: each streamed unit copied once per
    # forward, the next forward's first copies already under way.
    assert 2 * plan["streamed_bytes"] <= stats["bytes_copied"] <= \
        2 * plan["streamed_bytes"] + plan["ring_bytes"], (plan, stats)
    assert stats["issued_at_begin"] == 1 and stats["order_misses"] == 0, stats
    assert stats["most_ahead"] >= 1 and stats["replans"] == 0, stats
    # Outside a forward every tensor is back in its unit's block, never in the ring.
    for p in streamed.model.parameters():
        assert any(u.block.data_ptr() <= p.data_ptr() < u.block.data_ptr() + u.nbytes
                   for u in streamed._units)


def test_small_transformer_streams_under_thirty_five_percent_with_the_same_outputs():
    _, streamed = stream_both(SmallTransformer(), torch.randint(0, 4000, (4, 32)), 0.35)
    assert streamed.plan()["streamed_bytes"] > 0


class Branchy(nn.Module):
    """Runs `a` then `b`, or `b` then `a`: the order of its units depends on the input."""

    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(256, 256), nn.Linear(256, 256)
        self.c = nn.Linear(256, 256)

    def forward(self, x, swap=False):
        x = self.b(self.a(x)) if not swap else self.a(self.b(x))
        return self.c(x)


def test_another_order_finishes_from_the_blocks_and_is_recorded_again():
    from seedance_trim import StreamedModel
    model = Branchy().eval()
    plain = copy.deepcopy(model)
    streamed = StreamedModel(model, int(model_bytes(model) * 0.7))
    x = torch.randn(3, 256)
    with torch.no_grad():
        for swap in (False, False, True, True, False):
            assert torch.equal(plain(x, swap=swap), streamed(x, swap=swap))
        # The 3rd and 5th forwards missed the plan (finished from the blocks); the 4th
        # recorded the new order.
        stats = streamed.stats()
        assert stats["replans"] == 1 and stats["order_misses"] == 1, stats
        for swap in (False, False):  # recorded again, then streamed
            assert torch.equal(plain(x, swap=swap), streamed(x, swap=swap))
    stats = streamed.stats()
    assert stats["replans"] == 2 and stats["order_misses"] == 0, stats
    assert stats["bytes_copied"] >= streamed.plan()["streamed_bytes"] > 0, stats


def test_streaming_refuses_what_it_cannot_do():
    from seedance_trim import StreamedModel
    model = nn.Sequential(nn.Linear(64, 64), nn.Linear(64, 64))
    streamed = StreamedModel(model, model_bytes(model) // 2)
    with pytest.raises(RuntimeError, match="no_grad"):
        streamed(torch.randn(1, 64))  # training is not streamed
    tied = nn.Sequential(nn.Linear(64, 64), nn.Linear(64, 64))
    tied[1].weight = tied[0].weight
    with pytest.raises(ValueError, match="tied"):
        StreamedModel(tied, 10000)

    class Nested(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = nn.Parameter(torch.ones(64))
            self.inner = nn.Linear(64, 64)

    with pytest.raises(ValueError, match="nested"):
        StreamedModel(Nested(), 10000)
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="CUDA is not available"):
            StreamedModel(nn.Linear(8, 8), 10000, device="cuda")


# ---- training under TrimmedModel (issue 41) ----

class SmallCNN(nn.Module):
    """Convolutions with batch norm (running statistics written in train mode, in-place ReLU),
    then six 256-wide layers: no unit near 40% of the model, as a budget that must hold two
    units in the backward pass needs."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(inplace=True),
            nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d(2), nn.Flatten())
        layers = []
        for _ in range(6):
            layers += [nn.Linear(256, 256), nn.ReLU()]
        self.head = nn.Sequential(*layers, nn.Linear(256, 10))

    def forward(self, x):
        return self.head(self.features(x))


def train_three_steps(async_copies, backward_prefetch):
    """3 SGD steps of SmallCNN plainly and under TrimmedModel at 40%; returns the trimmed
    model's stats after checking every parameter and running stat is bit-identical."""
    torch.manual_seed(1)
    model = SmallCNN()
    plain = copy.deepcopy(model)
    size = model_bytes(model)
    manager = TrimManager.host(int(size * 0.4), 2 * size, min_victim_bytes=0,
                               async_copies=1 if async_copies else 0)
    trimmed = TrimmedModel(model, manager, backward_prefetch=backward_prefetch).train()
    plain.train()
    opt_plain = torch.optim.SGD(plain.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    opt_trim = torch.optim.SGD(trimmed.model.parameters(), lr=0.1, momentum=0.9,
                               weight_decay=1e-4)
    loss_fn = nn.CrossEntropyLoss()
    for step in range(3):
        x, y = torch.randn(8, 3, 16, 16), torch.randint(0, 10, (8,))
        for m, opt, step_fn in ((plain, opt_plain, None), (trimmed, opt_trim, trimmed)):
            opt.zero_grad()
            loss = loss_fn(m(x), y)
            loss.backward()
            if step_fn is None:
                opt.step()
            else:
                step_fn.optimizer_step(opt)
    stats = trimmed.stats()
    assert stats["fast_peak_used"] <= int(size * 0.4), stats
    assert stats["bytes_moved_up"] > size, "weights came back for the backward passes"
    got = trimmed.copied_state()  # one buffer at a time: the model does not fit the budget
    for name, t in list(plain.named_parameters()) + list(plain.named_buffers()):
        assert torch.equal(t.detach(), got[name]), name
    return stats


def test_three_sgd_steps_under_forty_percent_give_the_same_parameters():
    train_three_steps(async_copies=False, backward_prefetch=False)


def test_backward_prefetch_brings_units_back_ahead_with_the_same_parameters():
    # On the copy worker, the unit before the one the backward pass reaches starts coming back
    # while this one's gradients are computed: its unpack then finds it back or on its way
    # (no stall). Without the prefetch every unit of the backward pass stalls.
    without = train_three_steps(async_copies=True, backward_prefetch=False)
    with_prefetch = train_three_steps(async_copies=True, backward_prefetch=True)
    assert with_prefetch["prefetches"] > without["prefetches"], (without, with_prefetch)
    assert with_prefetch["stalls"] < without["stalls"], (without, with_prefetch)
    # 40% holds two of the head's 257 KiB units, not three: a prefetch that finds no room is
    # skipped (counted), never an error; the unit comes back when the backward pass needs it.
    assert with_prefetch["backward_prefetches_refused"] > 0, with_prefetch


def test_activations_on_cpu_is_checked_and_changes_nothing_for_a_cpu_model():
    with pytest.raises(ValueError, match="activations"):
        TrimmedModel(SmallCNN(), TrimManager.host(1 << 20, 8 << 20), activations="disk")
    # On the CPU, activations are where they would wait anyway: the same training.
    torch.manual_seed(3)
    model = SmallCNN()
    a, b = copy.deepcopy(model), copy.deepcopy(model)
    size = model_bytes(model)
    results = []
    for m, act in ((a, "device"), (b, "cpu")):
        trimmed = TrimmedModel(m, TrimManager.host(size, 2 * size, min_victim_bytes=0),
                               activations=act).train()
        opt = torch.optim.SGD(trimmed.model.parameters(), lr=0.1)
        torch.manual_seed(4)
        x, y = torch.randn(8, 3, 16, 16), torch.randint(0, 10, (8,))
        nn.CrossEntropyLoss()(trimmed(x), y).backward()
        trimmed.optimizer_step(opt)
        results.append(trimmed.copied_state())
    for name in results[0]:
        assert torch.equal(results[0][name], results[1][name]), name


def test_gradients_moved_off_as_produced_train_the_same_and_accumulate_the_same():
    with pytest.raises(ValueError, match="gradients"):
        TrimmedModel(SmallCNN(), TrimManager.host(1 << 20, 8 << 20), gradients="disk")
    torch.manual_seed(5)
    model = SmallCNN()
    plain = copy.deepcopy(model).train()
    size = model_bytes(model)
    manager = TrimManager.host(int(size * 0.4), 2 * size, min_victim_bytes=0)
    trimmed = TrimmedModel(model, manager, gradients="cpu").train()
    opt_plain = torch.optim.SGD(plain.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    opt_trim = torch.optim.SGD(trimmed.model.parameters(), lr=0.1, momentum=0.9,
                               weight_decay=1e-4)
    loss_fn = nn.CrossEntropyLoss()
    grad_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    for step in range(3):
        # Two backward passes per step: the second adds to the gradients already moved off.
        batches = [(torch.randn(8, 3, 16, 16), torch.randint(0, 10, (8,))) for _ in range(2)]
        opt_plain.zero_grad()
        trimmed.zero_grad()
        for x, y in batches:
            loss_fn(plain(x), y).backward()
            loss_fn(trimmed(x), y).backward()
            # Every gradient left its parameter as soon as autograd had accumulated it.
            assert all(p.grad is None for p in trimmed.model.parameters())
        assert trimmed.stats()["gradient_bytes_waiting"] == grad_bytes
        opt_plain.step()
        trimmed.optimizer_step(opt_trim)
        assert trimmed.stats()["gradient_bytes_waiting"] == 0, "the step consumed them"
    assert trimmed.stats()["gradient_bytes_moved_off"] == 3 * 2 * grad_bytes
    assert trimmed.stats()["fast_peak_used"] <= int(size * 0.4)
    got = trimmed.copied_state()
    for name, t in list(plain.named_parameters()) + list(plain.named_buffers()):
        assert torch.equal(t.detach(), got[name]), name


def test_zero_grad_drops_the_gradients_moved_off():
    torch.manual_seed(6)
    model = SmallCNN()
    reference = copy.deepcopy(model)
    size = model_bytes(model)
    trimmed = TrimmedModel(model, TrimManager.host(size, 2 * size, min_victim_bytes=0),
                           gradients="cpu").train()
    opt = torch.optim.SGD(trimmed.model.parameters(), lr=0.1)
    x, y = torch.randn(8, 3, 16, 16), torch.randint(0, 10, (8,))
    nn.CrossEntropyLoss()(trimmed(x), y).backward()
    assert trimmed.stats()["gradient_bytes_waiting"] > 0
    # A plain step would skip every parameter (p.grad is None): the guard says so.
    with pytest.raises(RuntimeError, match=r"waits in host memory"):
        optimizer_guard.check_step(opt)
    trimmed.zero_grad()  # a skipped step: nothing of it may reach the next one
    optimizer_guard.check_step(opt)  # nothing waits: nothing to skip
    assert trimmed.stats()["gradient_bytes_waiting"] == 0
    trimmed.optimizer_step(opt)
    got = trimmed.copied_state()
    for name, t in reference.named_parameters():
        assert torch.equal(t.detach(), got[name]), f"{name} changed without a gradient"


# ---- activation checkpointing inside a TrimmedModel ----

class CheckpointedMLP(nn.Module):
    """An input layer, four blocks of two `width`-wide layers run through
    torch.utils.checkpoint in two segments (their activations are recomputed in the backward
    pass), a head. `reentrant` is checkpoint's use_reentrant; `sequential` runs the blocks
    through checkpoint_sequential instead (reentrant)."""

    def __init__(self, reentrant=True, sequential=False, width=256):
        super().__init__()
        self.reentrant = reentrant
        self.sequential = sequential
        self.inp = nn.Linear(64, width)
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width),
                          nn.Tanh())
            for _ in range(4))
        self.head = nn.Linear(width, 10)

    def segment(self, first, x):
        return self.blocks[first + 1](self.blocks[first](x))

    def forward(self, x):
        x = torch.relu(self.inp(x))
        if self.sequential:
            return self.head(torch.utils.checkpoint.checkpoint_sequential(self.blocks, 2, x))
        for first in (0, 2):
            x = torch.utils.checkpoint.checkpoint(self.segment, first, x,
                                                  use_reentrant=self.reentrant)
        return self.head(x)


@pytest.mark.parametrize("sequential", [False, True], ids=["checkpoint", "checkpoint_sequential"])
def test_a_reentrant_checkpoint_recomputes_under_the_budget_with_the_same_parameters(sequential):
    # The recomputation runs each segment's units again inside the backward pass, outside the
    # model's forward: their weights are brought back one unit at a time, as in a plain
    # backward pass, and never read after they moved (a moved block is PROT_NONE here: before
    # TrimmedModel handled this, the test died of a segmentation fault). The budget holds two
    # of the 257 KiB units and the small ones, as in a plain backward pass: not a segment's
    # four, and not a third either (a segment that kept the units the backward pass held
    # before it needs three).
    torch.manual_seed(7)
    model = CheckpointedMLP(sequential=sequential)
    plain = copy.deepcopy(model).train()
    size = model_bytes(model)
    unit = model_bytes(model.blocks[0][0])
    budget = 2 * unit + model_bytes(model.inp) + model_bytes(model.head) + 4096
    manager = TrimManager.host(budget, 2 * size, min_victim_bytes=0)
    trimmed = TrimmedModel(model, manager, activations="cpu").train()
    opt_plain = torch.optim.SGD(plain.parameters(), lr=0.1, momentum=0.9)
    opt_trim = torch.optim.SGD(trimmed.model.parameters(), lr=0.1, momentum=0.9)
    for _ in range(3):
        x, y = torch.randn(16, 64), torch.randint(0, 10, (16,))
        opt_plain.zero_grad()
        nn.functional.cross_entropy(plain(x), y).backward()
        opt_plain.step()
        opt_trim.zero_grad()
        nn.functional.cross_entropy(trimmed(x), y).backward()
        trimmed.optimizer_step(opt_trim)
    stats = trimmed.stats()
    assert stats["fast_peak_used"] <= budget, stats
    assert stats["bytes_moved_up"] > 3 * size, "weights came back for the recomputations"
    got = trimmed.copied_state()
    for name, t in plain.named_parameters():
        assert torch.equal(t.detach(), got[name]), name


def test_a_non_reentrant_checkpoint_is_refused_with_the_reason():
    # use_reentrant=False recomputes under checkpoint's own saved-tensor hooks, which must see
    # every tensor the segment saves: TrimmedModel cannot keep the weights there.
    model = CheckpointedMLP(reentrant=False)
    size = model_bytes(model)
    trimmed = TrimmedModel(model, TrimManager.host(int(size * 0.4), 2 * size,
                                                   min_victim_bytes=0)).train()
    loss = trimmed(torch.randn(4, 64)).sum()
    with pytest.raises(RuntimeError, match="use_reentrant=True"):
        loss.backward()


def guarded_step_setup():
    """The tanh stack at 40% after one backward pass, with an SGD over its parameters:
    (plain, trimmed, optimizer, the plain model's optimizer)."""
    plain, trimmed, _, _ = tanh_stack_at_40_percent(seed=7)
    x = torch.randn(4, 256)
    opt = torch.optim.SGD(trimmed.model.parameters(), lr=0.1)
    opt_plain = torch.optim.SGD(plain.parameters(), lr=0.1)
    for m in (plain, trimmed):
        m(x).square().sum().backward()
    return plain, trimmed, opt, opt_plain


def test_the_optimizer_guard_refuses_a_step_on_moved_weights_and_passes_acquired_ones():
    # The check the global pre-hook runs (any PyTorch): a step that would write a moved weight
    # is refused with the way out; a step over acquired weights passes (what optimizer_step
    # does: one unit's gradients shown, that unit acquired), and so does a step over a plain
    # model's parameters while a TrimmedModel is alive.
    plain, trimmed, opt, opt_plain = guarded_step_setup()
    with pytest.raises(RuntimeError, match=r"model\.optimizer_step\(optimizer\)") as refused:
        optimizer_guard.check_step(opt)
    assert "SGD.step() would write" in str(refused.value)
    optimizer_guard.check_step(opt_plain)
    first = list(trimmed.model[0].parameters())
    for p in trimmed.model.parameters():
        if all(p is not q for q in first):
            p.grad = None
    with pytest.raises(RuntimeError, match=r"would write 0\.0\.(weight|bias)"):
        optimizer_guard.check_step(opt)  # the first unit's, not acquired
    bids = list(dict.fromkeys(trimmed._ids[id(p)] for p in first))
    trimmed._acquire(bids, write=True)
    try:
        optimizer_guard.check_step(opt)
    finally:
        trimmed._release(bids)
    for p in first:
        p.grad = None
    optimizer_guard.check_step(opt)  # nothing with a gradient: nothing written


@pytest.mark.skipif(not optimizer_guard.available(),
                    reason="global optimizer pre-hooks need PyTorch >= 2.0 (this one is "
                           f"{torch.__version__}); the check itself is tested above")
def test_a_plain_optimizer_step_is_refused_before_it_writes_and_optimizer_step_works():
    plain, trimmed, opt, opt_plain = guarded_step_setup()
    with pytest.raises(RuntimeError, match=r"model\.optimizer_step\(optimizer\)"):
        opt.step()  # without the guard: a segmentation fault
    trimmed.optimizer_step(opt)  # the refused step wrote nothing: one step, as plainly
    opt_plain.step()
    got = trimmed.copied_state()
    for name, t in plain.named_parameters():
        assert torch.equal(t.detach(), got[name]), name


def tanh_stack_at_40_percent(seed):
    """Eight 256-wide tanh layers, plain and under TrimmedModel at 40% of their size:
    (plain, trimmed, size, budget)."""
    torch.manual_seed(seed)
    model = nn.Sequential(*[nn.Sequential(nn.Linear(256, 256), nn.Tanh()) for _ in range(8)])
    plain = copy.deepcopy(model)
    size = model_bytes(model)
    budget = int(size * 0.4)
    return plain, TrimmedModel(model, TrimManager.host(budget, 2 * size, min_victim_bytes=0)), \
        size, budget


def test_a_gradient_penalty_double_backward_gives_the_plain_gradients_under_the_budget():
    # create_graph=True records the backward pass, and its nodes save the weights again for
    # the second backward pass: they are marked like the forward's (before, the second pass
    # read them at moved memory and the process died of a segmentation fault).
    plain, trimmed, size, budget = tanh_stack_at_40_percent(seed=8)
    for m in (plain, trimmed):
        torch.manual_seed(9)
        x = torch.randn(16, 256, requires_grad=True)
        grad_x, = torch.autograd.grad(m(x).sum(), x, create_graph=True)
        ((grad_x.norm() - 1) ** 2).backward()
    got = dict(trimmed.model.named_parameters())
    for name, p in plain.named_parameters():
        assert torch.equal(p.grad, got[name].grad), name
    stats = trimmed.stats()
    assert stats["fast_peak_used"] <= budget, stats
    assert stats["bytes_moved_up"] > 2 * size, "weights came back for both backward passes"


def test_autograd_drops_the_saved_tensor_hooks_a_node_pushed_when_the_node_ends():
    # What the double backward above relies on: hooks pushed inside a node's backward (and
    # never popped) are gone for the next node and after the backward pass.
    packed = []

    class PushesHooks(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            torch.autograd.graph.saved_tensors_hooks(
                lambda t: packed.append(t) or t, lambda t: t).__enter__()
            return g * 2

    class SavesATensor(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 3

        @staticmethod
        def backward(ctx, g):
            with torch.enable_grad():
                y = torch.ones(2, requires_grad=True)
                (y * y).sum()  # saves y: a leaked pack hook would see it
            return g * 3

    x = torch.ones(2, requires_grad=True)
    PushesHooks.apply(SavesATensor.apply(x)).sum().backward()  # PushesHooks' node runs first
    assert not packed, "the hooks outlived their node"
    y = torch.ones(2, requires_grad=True)
    (y * y).sum()
    assert not packed, "the hooks outlived the backward pass"


def test_units_called_outside_forward_with_grad_keep_their_weights_for_the_backward_pass():
    # The wrapped model called directly, not through TrimmedModel.forward(): each unit pushes
    # the saved-tensor hooks itself, so the backward pass brings the weights back (before, it
    # read them at moved memory).
    plain, trimmed, size, budget = tanh_stack_at_40_percent(seed=10)
    x = torch.randn(16, 256)
    plain(x).sum().backward()
    trimmed.model(x).sum().backward()
    got = dict(trimmed.model.named_parameters())
    for name, p in plain.named_parameters():
        assert torch.equal(p.grad, got[name].grad), name
    assert trimmed.stats()["fast_peak_used"] <= budget


# ---- state_dict() and load_state_dict() (state_dict_hooks.py) ----

def wide_stack():
    return nn.Sequential(*[nn.Linear(256, 256) for _ in range(8)], nn.BatchNorm1d(256)).eval()


def test_a_state_dict_can_be_saved_and_loaded_one_module_at_a_time_under_the_budget():
    # A plain state_dict() holds references: torch.save read them after they had moved, and
    # the process died of a segmentation fault. Now each module's tensors are copied out,
    # and load_state_dict() acquires each module's tensors while PyTorch's loader copies in.
    import io
    torch.manual_seed(11)
    model = wide_stack()
    plain = copy.deepcopy(model)
    other = copy.deepcopy(model)
    with torch.no_grad():
        for p in other.parameters():
            p.mul_(0.5)
    size = model_bytes(model)
    budget = int(size * 0.4)
    trimmed = TrimmedModel(model, TrimManager.host(budget, 2 * size, min_victim_bytes=0))
    x = torch.randn(4, 256)
    with torch.no_grad():
        assert torch.equal(trimmed(x), plain(x))  # layers have moved

    saved = io.BytesIO()
    torch.save(trimmed.state_dict(), saved)
    saved.seek(0)
    loaded = torch.load(saved)
    want = plain.state_dict()
    assert list(loaded) == ["model." + k for k in want]
    for k, v in want.items():
        assert torch.equal(loaded["model." + k], v), k
    inner = trimmed.model.state_dict()
    assert list(inner) == list(want)
    for k, v in want.items():
        assert torch.equal(inner[k], v), k
    # keep_vars=True asks for the live tensors, and gets them.
    assert trimmed.model.state_dict(keep_vars=True)["0.weight"] is trimmed.model[0].weight

    assert not trimmed.model.load_state_dict(other.state_dict()).missing_keys
    with torch.no_grad():
        assert torch.equal(trimmed(x), other(x)), "the loaded weights are what runs"
    assert trimmed.load_state_dict(loaded).unexpected_keys == []  # the wrapper's names
    with torch.no_grad():
        assert torch.equal(trimmed(x), plain(x))
    assert trimmed.stats()["fast_peak_used"] <= budget

    # PyTorch's loader still checks: a wrong shape is an error, and nothing stays acquired.
    wrong = dict(other.state_dict())
    wrong["3.weight"] = torch.zeros(2, 2)
    with pytest.raises(RuntimeError, match="size mismatch for 3.weight"):
        trimmed.model.load_state_dict(wrong)
    assert all(n == 0 for n in trimmed._counts.values())

    # load_state_dict(assign=True) (torch >= 2.1) would put the loaded tensors in place of the
    # ones TrimmedModel keeps: refused. Its mark in the loader's metadata, made by hand here.
    assigning = other.state_dict()
    assigning._metadata = {str(i): {"assign_to_params_buffers": True} for i in range(9)}
    with pytest.raises(RuntimeError, match="assign=True"):
        trimmed.model.load_state_dict(assigning)
    assert all(n == 0 for n in trimmed._counts.values())


# ---- mixed precision (autocast_weights.py) ----

def train_amp_and_check_copies(plain, trimmed, batches, device_type, dtype, lr, copies_saved,
                               min_numel=0):
    """Plain and trimmed AMP training (SGD with momentum) on `batches`: after the first
    trimmed forward, still inside the autocast region, none of the `copies_saved` weight
    copies autograd saved (of at least `min_numel` elements) is alive; at the end the
    parameters are equal. Returns the trimmed model's stats."""
    import gc
    import weakref
    copies = []
    mark = trimmed._mark

    def spy(t, activation_to_cpu):  # the weight copies autograd saves (as views)
        if t.dtype == dtype and t._base is not None and t.numel() >= min_numel:
            copies.append(weakref.ref(t._base))
        return mark(t, activation_to_cpu)

    trimmed._mark = spy
    opt_plain = torch.optim.SGD(plain.parameters(), lr=lr, momentum=0.9)
    opt_trim = torch.optim.SGD(trimmed.model.parameters(), lr=lr, momentum=0.9)
    for step, (x, y) in enumerate(batches):
        opt_plain.zero_grad()
        with torch.autocast(device_type, dtype=dtype):
            loss = nn.functional.cross_entropy(plain(x).float(), y)
        loss.backward()
        opt_plain.step()
        opt_trim.zero_grad()
        with torch.autocast(device_type, dtype=dtype):
            loss = nn.functional.cross_entropy(trimmed(x).float(), y)
            if step == 0:
                gc.collect()
                assert len(copies) == copies_saved, "the layers after the first save weights"
                assert all(c() is None for c in copies), "a weight copy is still alive"
        loss.backward()
        trimmed.optimizer_step(opt_trim)
    del trimmed._mark
    got = trimmed.copied_state()
    for name, p in plain.named_parameters():
        assert torch.equal(p.detach().cpu(), got[name].cpu()), name
    return trimmed.stats()


def test_autocast_training_keeps_no_weight_copies_and_gives_the_plain_parameters():
    # Autocast casts each weight to bf16 (fp16 on CUDA), caches the copy until the region
    # ends, and autograd saves it for the backward pass: copies of the whole model that the
    # budget does not see. Each unit's forward hook clears the cache, and a saved copy is
    # kept as how to make it again. Seen here through the copies themselves: none is alive
    # once the forward has returned, still inside the autocast region.
    torch.manual_seed(13)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(),
                          *[nn.Sequential(nn.Linear(256, 256), nn.ReLU()) for _ in range(6)],
                          nn.Linear(256, 10))
    plain = copy.deepcopy(model)
    size = model_bytes(model)
    budget = int(size * 0.4)
    trimmed = TrimmedModel(model, TrimManager.host(budget, 2 * size, min_victim_bytes=0))
    batches = [(torch.randn(16, 64), torch.randint(0, 10, (16,))) for _ in range(3)]
    # The 7 layers after the first save their weights.
    stats = train_amp_and_check_copies(plain, trimmed, batches, "cpu", torch.bfloat16, 0.1, 7)
    assert stats["weight_casts_redone"] == 3 * 7, stats
    assert stats["fast_peak_used"] <= budget, stats
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        x = torch.randn(4, 64)
        assert torch.equal(trimmed.eval()(x), plain.eval()(x))


def test_autocast_inference_gives_the_plain_outputs_trimmed_and_streamed():
    # Under autocast each wrapper's forward hook clears autocast's cache of weight copies
    # (on CUDA, scripts/gpu-check --stream checks that none stays on the device): outputs
    # stay the plain model's, across forwards in one region and in new ones.
    from seedance_trim import StreamedModel
    torch.manual_seed(15)
    model = nn.Sequential(*[nn.Sequential(nn.Linear(256, 256), nn.ReLU()) for _ in range(8)])
    plain = copy.deepcopy(model).eval()
    size = model_bytes(model)
    trimmed = TrimmedModel(copy.deepcopy(model),
                           TrimManager.host(int(size * 0.4), 2 * size, min_victim_bytes=0))
    streamed = StreamedModel(copy.deepcopy(model).eval(), int(size * 0.4))
    x = torch.randn(4, 256)
    for _ in range(2):
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            want = plain(x)
            assert want.dtype == torch.bfloat16
            for _ in range(2):
                assert torch.equal(trimmed.eval()(x), want)
                assert torch.equal(streamed(x), want)
    assert streamed.plan()["streamed_bytes"] > 0, streamed.plan()
    assert streamed.stats()["order_misses"] == 0, streamed.stats()


def test_converting_or_moving_the_wrapper_is_refused_unless_it_changes_nothing():
    # .half() read every tensor (moved ones too: a segmentation fault) and put plain copies
    # in their place, outside the budget.
    torch.manual_seed(17)
    model = nn.Sequential(*[nn.Linear(256, 256) for _ in range(8)]).eval()
    plain = copy.deepcopy(model)
    size = model_bytes(model)
    trimmed = TrimmedModel(model, TrimManager.host(int(size * 0.4), 2 * size,
                                                   min_victim_bytes=0)).eval()
    x = torch.randn(4, 256)
    with torch.no_grad():
        assert torch.equal(trimmed(x), plain(x))
    for convert in (lambda m: m.half(), lambda m: m.to(torch.bfloat16), lambda m: m.double(),
                    lambda m: m.share_memory()):
        with pytest.raises(RuntimeError, match="before wrapping"):
            convert(trimmed)
    # Changes nothing: allowed (channels_last concerns 4-D tensors only).
    assert trimmed.to("cpu").float().to(memory_format=torch.channels_last) is trimmed
    conv = TrimmedModel(nn.Conv2d(3, 8, 3), TrimManager.host(1 << 20, 1 << 20))
    with pytest.raises(RuntimeError, match="before wrapping"):
        conv.to(memory_format=torch.channels_last)
    with torch.no_grad():
        assert torch.equal(trimmed(x), plain(x))


class Symmetric(nn.Module):
    """A parametrization: the weight used is the symmetric part of the one stored."""

    def forward(self, w):
        return (w + w.t()) / 2


def reparametrized_stack(kind):
    """Eight 256-wide layers whose weight is computed before each forward: by a forward
    pre-hook (torch.nn.utils.prune, weight_norm, spectral_norm), or from the parameter of a
    child that is never called (torch.nn.utils.parametrize)."""
    from torch.nn.utils import parametrize, prune
    torch.manual_seed(18)
    model = nn.Sequential(*[nn.Sequential(nn.Linear(256, 256), nn.Tanh()) for _ in range(8)])
    with torch.no_grad():
        for block in model:
            if kind == "prune":
                prune.l1_unstructured(block[0], "weight", amount=0.5)
            elif kind == "weight_norm":
                torch.nn.utils.weight_norm(block[0])
            elif kind == "spectral_norm":
                torch.nn.utils.spectral_norm(block[0])
            else:
                parametrize.register_parametrization(block[0], "weight", Symmetric())
    return model


@pytest.mark.parametrize("kind", ["prune", "weight_norm", "spectral_norm", "parametrize"])
def test_weights_computed_before_the_forward_read_their_sources_acquired(kind):
    # The reparametrizing pre-hook ran before TrimmedModel's, and parametrize reads a child's
    # parameter without calling the child: both read moved memory (a segmentation fault).
    # Now TrimmedModel's pre-hook runs first and a parametrized module is one unit.
    plain = reparametrized_stack(kind)
    model = reparametrized_stack(kind)
    size = model_bytes(model)
    budget = int(size * 0.4)
    trimmed = TrimmedModel(model, TrimManager.host(budget, 2 * size, min_victim_bytes=0))
    x, y = torch.randn(16, 256), torch.randn(16, 256)
    with torch.no_grad():
        for _ in range(2):
            assert torch.equal(trimmed.eval()(x), plain.eval()(x))
    trimmed.train()
    plain.train()
    opt_plain = torch.optim.SGD(plain.parameters(), lr=0.1)
    opt_trim = torch.optim.SGD(trimmed.model.parameters(), lr=0.1)
    for _ in range(2):
        opt_plain.zero_grad()
        nn.functional.mse_loss(plain(x), y).backward()
        opt_plain.step()
        opt_trim.zero_grad()
        nn.functional.mse_loss(trimmed(x), y).backward()
        trimmed.optimizer_step(opt_trim)
    got = trimmed.copied_state()
    for name, p in plain.named_parameters():
        assert torch.equal(p.detach(), got[name]), name
    assert trimmed.stats()["fast_peak_used"] <= budget


@pytest.mark.parametrize("kind", ["prune", "weight_norm", "spectral_norm", "parametrize"])
def test_weights_computed_before_the_forward_stream_with_the_plain_outputs(kind):
    # StreamedModel's pre-hook also runs first, so the sources are in the ring when the
    # weight is computed (on the CPU their blocks hold the same bytes, so only a GPU could
    # tell), and a parametrized module is one unit (it was refused as nested units before).
    from seedance_trim import StreamedModel
    plain = reparametrized_stack(kind).eval()
    model = reparametrized_stack(kind).eval()
    streamed = StreamedModel(model, int(model_bytes(model) * 0.4))
    x = torch.randn(16, 256)
    with torch.no_grad():
        for _ in range(3):
            assert torch.equal(streamed(x), plain(x))
    assert streamed.plan()["streamed_bytes"] > 0
    assert streamed.stats()["order_misses"] == 0, streamed.stats()
