"""Small models for the ahead-of-time tests."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 32)
        self.fc3 = nn.Linear(32, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


class CNN(nn.Module):
    """conv + batch norm (eval, non-trivial statistics) + pooling + linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, kernel_size=3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(8, 16, kernel_size=3, padding=1, stride=2)
        self.bn2 = nn.BatchNorm2d(16)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 10)
        with torch.no_grad():
            for bn in (self.bn1, self.bn2):
                bn.running_mean.uniform_(-0.5, 0.5)
                bn.running_var.uniform_(0.5, 2.0)
                bn.weight.uniform_(0.5, 1.5)
                bn.bias.uniform_(-0.2, 0.2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(F.relu(self.bn1(self.conv1(x))))
        x = F.relu(self.bn2(self.conv2(x)))
        x = torch.flatten(self.gap(x), 1)
        return self.fc(x)


class AttentionBlock(nn.Module):
    """Pre-LN transformer block with causal attention over a dynamic sequence length."""

    MAX_T = 16
    CTX = 32  # mask buffer > MAX_T so export does not specialize T

    def __init__(self, dim: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.heads, self.hd = heads, dim // heads
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)
        self.register_buffer("mask", torch.full((self.CTX, self.CTX), float("-inf")).triu(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=-1)
        q = q.reshape(B, T, self.heads, self.hd).transpose(1, 2)
        k = k.reshape(B, T, self.heads, self.hd).transpose(1, 2)
        v = v.reshape(B, T, self.heads, self.hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / self.hd ** 0.5) + self.mask[:T, :T]
        y = (att.softmax(dim=-1) @ v).transpose(1, 2).reshape(B, T, C)
        x = x + self.proj(y)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class Stateful(nn.Module):
    """Buffers updated in place on every call; non-zero starting values."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("count", torch.tensor([1.0]))
        self.register_buffer("acc", torch.arange(8, dtype=torch.float32).reshape(2, 4) * 0.25)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.count.add_(1.0)
        self.acc.mul_(0.5)
        self.acc.add_(x)
        return self.acc * self.count


class EncoderDecoder(nn.Module):
    """Two methods sharing one weight: forward (encode) and decode."""

    def __init__(self) -> None:
        super().__init__()
        self.enc = nn.Linear(8, 4)
        self.dec = nn.Linear(4, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.enc(x))

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.dec(z))


class IntBoolOps(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor, m: torch.Tensor):
        c = a * 3 + b
        d = (c > 4) & m
        e = torch.where(d, c, a - 1)
        f = torch.logical_or(~m, a % 2 == 0)
        return e, d, a // 2, f, a.to(torch.float32) * 0.5, (b - a).abs().max()


class TupleOut(nn.Module):
    def forward(self, x: torch.Tensor):
        return x + 1, x * 2


class ListOut(nn.Module):
    def forward(self, x: torch.Tensor):
        return [x.relu(), x.sum(dim=0), x.mean()]


class DictOut(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor):
        return {"sum": x + y, "nested": [x * y, {"diff": x - y}]}


class SplitOut(nn.Module):
    """A multi-output op (split, topk-free) whose pieces are all returned."""

    def forward(self, x: torch.Tensor):
        a, b, c = torch.split(x, [1, 2, 3], dim=1)
        return c, a * 2, b


class CumProd(nn.Module):
    """torch.cumprod stays aten.cumprod after decomposition, which is not core ATen."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x + 1
        return torch.cumprod(y, dim=1)


class Branchy(nn.Module):
    """torch.cond: a linear branch and an elementwise branch, joined by an add."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        def then(x: torch.Tensor) -> torch.Tensor:
            return self.fc(x).relu() * 2.0

        def otherwise(x: torch.Tensor) -> torch.Tensor:
            return x - 1

        return torch.cond(x.sum() > 0, then, otherwise, (x,)) + 1


class InputMutation(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x.mul_(2.0)
        return x + 1


class SymArith(nn.Module):
    """Arithmetic on a dynamic size: views, slices, arange and scalars derived from T."""

    def forward(self, x: torch.Tensor, y: torch.Tensor):
        B, T, C = x.shape
        z = x.reshape(B, T * 2, C // 2)
        n = (T + 1) // 2
        w = torch.arange(T * 3).float()
        return z * y[:, : T * 2].unsqueeze(-1), w[:n] + T, torch.zeros(T, 2) + z.shape[1] / 3


class TinyKVDecoder(nn.Module):
    """LLM-style step: tied embedding, attention over a KV cache kept in mutable buffers."""

    def __init__(self, dim: int = 16, ctx: int = 32, vocab: int = 50) -> None:
        super().__init__()
        self.dim = dim
        self.emb = nn.Embedding(vocab, dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.emb.weight  # tied
        self.register_buffer("k_cache", torch.zeros(1, ctx, dim))
        self.register_buffer("v_cache", torch.zeros(1, ctx, dim))

    def forward(self, tokens: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(self.emb(tokens)).split(self.dim, dim=-1)
        self.k_cache.index_copy_(1, pos, k)
        self.v_cache.index_copy_(1, pos, v)
        return self.head(F.scaled_dot_product_attention(q, self.k_cache, self.v_cache))


class AudioEncoder(nn.Module):
    """Whisper-style audio encoder: two conv1d over features [B, mels, T], the
    sequence turned to [B, T, C] (a transpose), positional embeddings, one
    attention layer and a linear head. In eager the transposed view flows into
    copies that keep its layout (`.to`, `.clone`), the pattern that gives a
    [0, 2, 1] dim order."""

    MAX_T = 32

    def __init__(self, mels: int = 8, dim: int = 16, heads: int = 2, classes: int = 5) -> None:
        super().__init__()
        self.heads, self.hd = heads, dim // heads
        self.conv1 = nn.Conv1d(mels, dim, 3, padding=1)
        self.conv2 = nn.Conv1d(dim, dim, 3, stride=2, padding=1)
        self.pos = nn.Embedding(self.MAX_T // 2, dim)
        self.ln = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, feats: torch.Tensor) -> torch.Tensor:
        x = F.gelu(self.conv2(F.gelu(self.conv1(feats))))
        x = x.permute(0, 2, 1)                                   # [B, T, C], strided
        B, T, C = x.shape
        x = (x + self.pos.weight[:T]).to(feats.dtype).clone()  # layout-preserving copies
        q, k, v = self.qkv(self.ln(x)).split(C, dim=-1)
        q, k, v = (t.reshape(B, T, self.heads, self.hd).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v)
        x = x + self.out(y.transpose(1, 2).contiguous().reshape(B, T, C))
        return self.head(x)


def _randomize_batch_norms(m: nn.Module) -> None:
    """Non-trivial inference statistics for every batch norm of m."""
    with torch.no_grad():
        for bn in m.modules():
            if isinstance(bn, nn.modules.batchnorm._BatchNorm):
                bn.running_mean.uniform_(-0.5, 0.5)
                bn.running_var.uniform_(0.5, 2.0)
                bn.weight.uniform_(0.5, 1.5)
                bn.bias.uniform_(-0.2, 0.2)


class CNN3d(nn.Module):
    """A small video classifier over [N, C, T, H, W]: a 3x3x3 stem, batch norm,
    max pooling over (1, 2, 2), a strided depthwise 3-d convolution, a
    pointwise one, global average pooling and a linear head."""

    def __init__(self, classes: int = 5) -> None:
        super().__init__()
        self.stem = nn.Conv3d(3, 8, kernel_size=3, padding=1)
        self.bn1 = nn.BatchNorm3d(8)
        self.pool = nn.MaxPool3d((1, 2, 2))
        self.dw = nn.Conv3d(8, 8, kernel_size=3, stride=2, padding=1, groups=8)
        self.pw = nn.Conv3d(8, 16, kernel_size=1, bias=False)
        self.bn2 = nn.BatchNorm3d(16)
        self.gap = nn.AdaptiveAvgPool3d(1)
        self.fc = nn.Linear(16, classes)
        _randomize_batch_norms(self)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(F.relu(self.bn1(self.stem(x))))
        x = F.relu(self.bn2(self.pw(self.dw(x))))
        return self.fc(torch.flatten(self.gap(x), 1))


class Conv2Plus1d(nn.Sequential):
    """A (2+1)-d convolution: (1, 3, 3) over space, then (3, 1, 1) over time,
    as torchvision's R(2+1)D factors a 3x3x3 one."""

    def __init__(self, cin: int, cout: int, mid: int, stride: int = 1) -> None:
        super().__init__(
            nn.Conv3d(cin, mid, (1, 3, 3), stride=(1, stride, stride), padding=(0, 1, 1),
                      bias=False),
            nn.BatchNorm3d(mid),
            nn.ReLU(),
            nn.Conv3d(mid, cout, (3, 1, 1), stride=(stride, 1, 1), padding=(1, 0, 0),
                      bias=False),
        )


class Residual3d(nn.Module):
    """A 3-d stem with temporal pooling, a (2+1)-d residual block with a
    strided 1x1x1 projection shortcut, a plain 3x3x3 residual block, average
    pooling over (2, 2, 2) and a linear head (r3d_18 / r2plus1d_18 in small)."""

    def __init__(self, classes: int = 4) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv3d(3, 8, (3, 5, 5), stride=(1, 2, 2), padding=(1, 2, 2), bias=False),
            nn.BatchNorm3d(8), nn.ReLU(), nn.MaxPool3d(kernel_size=(2, 1, 1)))
        self.a = nn.Sequential(Conv2Plus1d(8, 12, 10, stride=2), nn.BatchNorm3d(12), nn.ReLU(),
                               Conv2Plus1d(12, 12, 10), nn.BatchNorm3d(12))
        self.a_down = nn.Sequential(nn.Conv3d(8, 12, 1, stride=2, bias=False),
                                    nn.BatchNorm3d(12))
        self.b = nn.Sequential(nn.Conv3d(12, 12, 3, padding=1, bias=False), nn.BatchNorm3d(12),
                               nn.ReLU(), nn.Conv3d(12, 12, 3, padding=1, bias=False),
                               nn.BatchNorm3d(12))
        self.pool = nn.AvgPool3d(2)
        self.fc = nn.Linear(12, classes)
        _randomize_batch_norms(self)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        x = F.relu(self.a(x) + self.a_down(x))
        x = F.relu(self.b(x) + x)
        x = self.pool(x)
        return self.fc(x.mean(dim=(2, 3, 4)))
