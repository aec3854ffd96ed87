"""A decoder of Llama-7B's shape, randomly initialised (nothing downloaded), and its workload:
a prefill then decode steps with a KV cache. For weight streaming (bench/trim_stream.py), where
the shape (bytes per layer, the order the units run, compute per byte) is what matters; the
math is a plain pre-norm decoder (RMSNorm, attention without rotary embedding, SwiGLU MLP).

Every Linear, norm and the embedding is a unit of its own: 9 per layer, 291 for 32 layers,
13.5 GB in bf16 (4096 wide, 11008 in the MLP, 32000 tokens)."""
import math

import torch
from torch import nn
from torch.nn import functional as F


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        v = x.float().pow(2).mean(-1, keepdim=True)
        return (x.float() * torch.rsqrt(v + self.eps)).to(x.dtype) * self.weight


class Attention(nn.Module):
    """The KV cache is the module's own state (not an argument): wrappers that move a module's
    inputs (accelerate's hooks) copy argument lists, so a cache passed in would be lost."""

    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = (
            nn.Linear(d, d, bias=False) for _ in range(4))
        self.caching = False
        self.k_cache = self.v_cache = None

    def forward(self, x):
        b, t, d = x.shape
        h = self.heads

        def split(y):
            return y.view(b, t, h, d // h).transpose(1, 2)

        q, k, v = split(self.q_proj(x)), split(self.k_proj(x)), split(self.v_proj(x))
        if self.caching:
            if self.k_cache is not None:
                k = torch.cat([self.k_cache, k], dim=2)
                v = torch.cat([self.v_cache, v], dim=2)
            self.k_cache, self.v_cache = k, v
        causal = t > 1
        if hasattr(F, "scaled_dot_product_attention"):  # torch 2.x
            y = F.scaled_dot_product_attention(q, k, v, is_causal=causal and k.shape[2] == t)
        else:
            s = q @ k.transpose(-1, -2) / math.sqrt(d // h)
            if causal:
                s = s.masked_fill(torch.ones(t, k.shape[2], dtype=torch.bool, device=x.device)
                                  .triu(1 + k.shape[2] - t), float("-inf"))
            y = s.softmax(-1) @ v
        return self.o_proj(y.transpose(1, 2).reshape(b, t, d))


class MLP(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.gate_proj = nn.Linear(d, hidden, bias=False)
        self.up_proj = nn.Linear(d, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, d, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self, d, hidden, heads):
        super().__init__()
        self.input_norm = RMSNorm(d)
        self.attn = Attention(d, heads)
        self.post_norm = RMSNorm(d)
        self.mlp = MLP(d, hidden)

    def forward(self, x):
        x = x + self.attn(self.input_norm(x))
        return x + self.mlp(self.post_norm(x))


class LlamaShape(nn.Module):
    def __init__(self, layers=32, d=4096, hidden=11008, heads=32, vocab=32000):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList(Layer(d, hidden, heads) for _ in range(layers))
        self.norm = RMSNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, tokens):
        x = self.embed(tokens)
        for layer in self.layers:
            x = layer(x)
        return self.head(self.norm(x))


def build(layers, device, dtype=torch.bfloat16, seed=0):
    """Made on `device` (torch 2.x: fast on a GPU) in `dtype`, with small weights so that
    bf16 activations stay finite."""
    torch.manual_seed(seed)
    where = torch.device(device)
    made_there = hasattr(where, "__enter__")  # torch >= 2.0: a device is a context manager
    previous = torch.get_default_dtype()
    try:
        torch.set_default_dtype(dtype)
    except (TypeError, RuntimeError):  # older torch: made in float32, converted below
        pass
    try:
        if made_there:
            with where:
                model = LlamaShape(layers=layers)
        else:
            model = LlamaShape(layers=layers)
    finally:
        torch.set_default_dtype(previous)
    model = model.to(device=where, dtype=dtype)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0, 0.02)
    return model.eval()


def generate(model, prompt, steps):
    """Prefill `prompt` (batch, tokens) with `model` (a LlamaShape, or a wrapper of one), then
    `steps` greedy decode steps with the KV cache. Returns the last step's logits: every
    forward's result feeds the next."""
    attention = [m for m in model.modules() if isinstance(m, Attention)]
    for a in attention:
        a.caching, a.k_cache, a.v_cache = True, None, None
    try:
        logits = model(prompt)
        for _ in range(steps):
            logits = model(logits[:, -1:].argmax(-1))
    finally:
        for a in attention:
            a.caching, a.k_cache, a.v_cache = False, None, None
    return logits
