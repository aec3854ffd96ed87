"""Self-attention whose width, head count and output width are independent.

`nn.MultiheadAttention` ties its input width, its heads × head dimension and its output width
to one `embed_dim`, so removing heads (or input channels) leaves no MultiheadAttention that
holds the smaller weights. Pruning replaces it with this module: the same computation
(batch_first self-attention, the same parameter layout: `in_proj_weight` with the q, k and v
rows stacked, `in_proj_bias`, `out_proj`) and the same call signature, for any sizes.
"""
import torch
import torch.nn.functional as F
from torch import nn


class PrunedSelfAttention(nn.Module):
    def __init__(self, in_proj_weight, in_proj_bias, out_proj, num_heads, head_dim, dropout):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = head_dim
        self.dropout = dropout
        self.batch_first = True
        self.in_proj_weight = in_proj_weight
        self.in_proj_bias = in_proj_bias
        self.out_proj = out_proj

    @classmethod
    def from_multihead(cls, mha, in_proj_weight, in_proj_bias, out_weight, out_bias):
        head_dim = mha.embed_dim // mha.num_heads
        out = nn.Linear(out_weight.shape[1], out_weight.shape[0], bias=out_bias is not None)
        out.weight = out_weight
        if out_bias is not None:
            out.bias = out_bias
        return cls(in_proj_weight, in_proj_bias, out, out_weight.shape[1] // head_dim, head_dim,
                   mha.dropout).to(in_proj_weight.device)

    def forward(self, query, key=None, value=None, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        batch, length, _ = query.shape
        qkv = F.linear(query, self.in_proj_weight, self.in_proj_bias)
        q, k, v = qkv.view(batch, length, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        scores = (q * self.head_dim ** -0.5) @ k.transpose(-2, -1)
        if attn_mask is not None:
            scores = (scores.masked_fill(attn_mask, float("-inf")) if attn_mask.dtype == torch.bool
                      else scores + attn_mask)
        if key_padding_mask is not None:
            pad = key_padding_mask.view(batch, 1, 1, length)
            scores = (scores.masked_fill(pad, float("-inf")) if pad.dtype == torch.bool
                      else scores + pad)
        weights = scores.softmax(dim=-1)
        if self.training and self.dropout > 0:
            weights = F.dropout(weights, p=self.dropout)
        out = (weights @ v).transpose(1, 2).reshape(batch, length, self.num_heads * self.head_dim)
        out = self.out_proj(out)
        if not need_weights:
            return out, None
        return out, weights.mean(dim=1) if average_attn_weights else weights
