"""Small models that the tests, the benchmark and the GPU check prune: a CNN with a residual
block for digits and Fashion-MNIST, a plain MLP, and a ViT-style transformer."""
import torch
from torch import nn


class ResBlock(nn.Module):
    """relu(x + conv-BN-ReLU-conv-BN(x)): output shaped like its input, so it can be skipped."""

    def __init__(self, c):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c),
                                  nn.ReLU(), nn.Conv2d(c, c, 3, padding=1, bias=False),
                                  nn.BatchNorm2d(c))

    def forward(self, x):
        return torch.relu(x + self.body(x))


class SmallCNN(nn.Module):
    """conv-BN-ReLU ×2, `blocks` residual blocks, pooling to 4×4, flattened into a 2-layer
    head. Works on 8×8 (digits) and 28×28 (Fashion-MNIST) images."""

    def __init__(self, width=32, classes=10, hidden=128, blocks=1):
        super().__init__()
        w = width
        self.stem = nn.Sequential(nn.Conv2d(1, w, 3, padding=1, bias=False), nn.BatchNorm2d(w),
                                  nn.ReLU())
        self.conv2 = nn.Sequential(nn.Conv2d(w, 2 * w, 3, padding=1, bias=False),
                                   nn.BatchNorm2d(2 * w), nn.ReLU())
        self.blocks = nn.Sequential(*[ResBlock(2 * w) for _ in range(blocks)])
        self.pool = nn.AdaptiveAvgPool2d(4)
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(2 * w * 16, hidden), nn.ReLU(),
                                  nn.Linear(hidden, classes))

    def forward(self, x):
        return self.head(self.pool(self.blocks(self.conv2(self.stem(x)))))


class MLP(nn.Module):
    def __init__(self, sizes=(64, 256, 256, 10)):
        super().__init__()
        layers = []
        for a, b in zip(sizes[:-1], sizes[1:]):
            layers += [nn.Linear(a, b), nn.ReLU()]
        self.net = nn.Sequential(*layers[:-1])

    def forward(self, x):
        return self.net(x.flatten(1))


class Block(nn.Module):
    """Pre-norm transformer block: x + attn(norm(x)), then x + mlp(norm(x))."""

    def __init__(self, dim, heads, mlp_ratio=4):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, dim * mlp_ratio), nn.GELU(),
                                 nn.Linear(dim * mlp_ratio, dim))

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class TinyViT(nn.Module):
    """Patches embedded by a strided convolution, a learned position embedding, transformer
    blocks, mean over tokens, a linear head."""

    def __init__(self, image=28, patch=7, dim=64, heads=4, depth=2, classes=10, channels=1):
        super().__init__()
        self.embed = nn.Conv2d(channels, dim, patch, stride=patch)
        self.pos = nn.Parameter(torch.randn(1, (image // patch) ** 2, dim) * 0.02)
        self.blocks = nn.Sequential(*[Block(dim, heads) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        x = self.embed(x).flatten(2).transpose(1, 2) + self.pos
        x = self.norm(self.blocks(x))
        return self.head(x.mean(dim=1))
