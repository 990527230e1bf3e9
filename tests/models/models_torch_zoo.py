"""PyTorch versions of the zoo's model kinds (imported only when torch is installed): exported to
ONNX by test_models_onnx.py and compiled with torch.compile(backend="nova") by
test_models_torch.py. Small sizes keep the CPU device fast."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from torch import nn


def torch_device(device: str) -> str:
    """`device` for torch tensors and modules: on cuda, skip when torch has no CUDA, and make the
    eager references true fp32 (cuDNN convolutions and matmuls default to TF32 on Ampere+)."""
    if device == "cuda":
        if not torch.cuda.is_available():
            pytest.skip("torch has no CUDA")
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
    return device


class MLP(nn.Module):
    def __init__(self, sizes: tuple[int, ...] = (64, 128, 32)) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        for i, (a, b) in enumerate(itertools.pairwise(sizes)):
            layers.append(nn.Linear(a, b))
            if i < len(sizes) - 2:
                layers.append(nn.GELU())
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def _randomise_bn(bn: nn.BatchNorm2d) -> nn.BatchNorm2d:
    with torch.no_grad():
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.uniform_(-0.2, 0.2)
        bn.running_mean.uniform_(-0.2, 0.2)
        bn.running_var.uniform_(0.5, 1.5)
    return bn


class ConvBlock(nn.Module):
    def __init__(self, ci: int = 3, co: int = 8) -> None:
        super().__init__()
        self.conv = nn.Conv2d(ci, co, 3, padding=1)
        self.bn = _randomise_bn(nn.BatchNorm2d(co))
        self.pool = nn.MaxPool2d(2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(torch.relu(self.bn(self.conv(x))))


class EncoderLayer(nn.Module):
    """Pre-LN encoder layer written with explicit ops (what the Python builder example does)."""

    def __init__(self, d: int = 32, heads: int = 4, ff: int = 64) -> None:
        super().__init__()
        self.d, self.heads = d, heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.ff1, self.ff2 = nn.Linear(d, ff), nn.Linear(ff, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        dh = d // self.heads
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (t.reshape(b, s, self.heads, dh).transpose(1, 2) for t in (q, k, v))
        att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(dh), dim=-1) @ v
        x = x + self.out(att.transpose(1, 2).reshape(b, s, d))
        return x + self.ff2(nn.functional.gelu(self.ff1(self.ln2(x))))


class BasicBlock(nn.Module):
    def __init__(self, ci: int, co: int, stride: int) -> None:
        super().__init__()
        self.c1 = nn.Conv2d(ci, co, 3, stride, 1, bias=False)
        self.b1 = _randomise_bn(nn.BatchNorm2d(co))
        self.c2 = nn.Conv2d(co, co, 3, 1, 1, bias=False)
        self.b2 = _randomise_bn(nn.BatchNorm2d(co))
        self.proj = None
        if stride != 1 or ci != co:
            self.proj = nn.Sequential(nn.Conv2d(ci, co, 1, stride, bias=False),
                                      _randomise_bn(nn.BatchNorm2d(co)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.b2(self.c2(torch.relu(self.b1(self.c1(x)))))
        return torch.relu(y + (x if self.proj is None else self.proj(x)))


class ResNetStack(nn.Module):
    def __init__(self, c: int = 8, classes: int = 10) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, c, 3, 1, 1, bias=False),
                                  _randomise_bn(nn.BatchNorm2d(c)), nn.ReLU())
        self.blocks = nn.Sequential(BasicBlock(c, c, 1), BasicBlock(c, 2 * c, 2))
        self.fc = nn.Linear(2 * c, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.blocks(self.stem(x))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(h, 1), 1))


ZOO = {
    "mlp": (MLP, (3, 64)),
    "conv_block": (ConvBlock, (2, 3, 10, 10)),
    "encoder_layer": (EncoderLayer, (2, 7, 32)),
    "resnet_stack": (ResNetStack, (2, 3, 12, 12)),
}


def build(name: str) -> tuple[nn.Module, tuple[int, ...]]:
    """The model `name` in eval mode with seeded weights, and its example input shape."""
    torch.manual_seed(0)
    cls, shape = ZOO[name]
    return cls().eval(), shape
