"""Real architectures people bring, written in plain torch.nn (torchvision/HF are not
dependencies) and faithful to the originals' structure and op forms, at small widths and
resolutions so the CPU device stays fast: ResNet-18 (BasicBlock) and ResNet-50 (Bottleneck)
style, MobileNetV2, a GPT-2 language model (HF-style masked attention and nanoGPT-style
`is_causal` SDPA), a BERT encoder with an int64 attention mask, and a ViT.

Each entry of REAL_ZOO builds the model in eval mode with seeded weights and example inputs.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F


def _randomise_bn(module: nn.Module) -> nn.Module:
    """Non-trivial running statistics for every BatchNorm (fresh ones are the identity)."""
    with torch.no_grad():
        for bn in module.modules():
            if isinstance(bn, nn.BatchNorm2d):
                bn.weight.uniform_(0.5, 1.5)
                bn.bias.uniform_(-0.2, 0.2)
                bn.running_mean.uniform_(-0.2, 0.2)
                bn.running_var.uniform_(0.5, 1.5)
    return module


# ---- ResNet (torchvision.models.resnet) --------------------------------------------------------

def _conv3x3(ci: int, co: int, stride: int = 1, groups: int = 1) -> nn.Conv2d:
    return nn.Conv2d(ci, co, 3, stride, 1, groups=groups, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, ci: int, planes: int, stride: int = 1,
                 downsample: nn.Module | None = None) -> None:
        super().__init__()
        self.conv1, self.bn1 = _conv3x3(ci, planes, stride), nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2, self.bn2 = _conv3x3(planes, planes), nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += identity
        return self.relu(out)


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, ci: int, planes: int, stride: int = 1,
                 downsample: nn.Module | None = None) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(ci, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2, self.bn2 = _conv3x3(planes, planes, stride), nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        out += identity
        return self.relu(out)


class ResNet(nn.Module):
    """torchvision's ResNet: 7x7/2 stem, BN, ReLU, MaxPool 3x3/2 pad 1, four stages (the first
    block of stages 2-4 strided, its shortcut a 1x1 stride-2 conv + BN), adaptive average pool,
    flatten, fc."""

    def __init__(self, block: type[BasicBlock | Bottleneck], layers: list[int],
                 width: int = 16, classes: int = 10) -> None:
        super().__init__()
        self.inplanes = width
        self.conv1 = nn.Conv2d(3, width, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._layer(block, width, layers[0])
        self.layer2 = self._layer(block, width * 2, layers[1], 2)
        self.layer3 = self._layer(block, width * 4, layers[2], 2)
        self.layer4 = self._layer(block, width * 8, layers[3], 2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(width * 8 * block.expansion, classes)
        _randomise_bn(self)

    def _layer(self, block: type[BasicBlock | Bottleneck], planes: int, blocks: int,
               stride: int = 1) -> nn.Sequential:
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                nn.Conv2d(self.inplanes, planes * block.expansion, 1, stride, bias=False),
                nn.BatchNorm2d(planes * block.expansion))
        layers: list[nn.Module] = [block(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * block.expansion
        layers += [block(self.inplanes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


# ---- MobileNetV2 (torchvision.models.mobilenetv2) ----------------------------------------------

class ConvBNReLU6(nn.Sequential):
    def __init__(self, ci: int, co: int, kernel: int = 3, stride: int = 1,
                 groups: int = 1) -> None:
        super().__init__(nn.Conv2d(ci, co, kernel, stride, (kernel - 1) // 2, groups=groups,
                                   bias=False),
                         nn.BatchNorm2d(co), nn.ReLU6(inplace=True))


class InvertedResidual(nn.Module):
    def __init__(self, ci: int, co: int, stride: int, expand: int) -> None:
        super().__init__()
        hidden = ci * expand
        self.use_res_connect = stride == 1 and ci == co
        layers: list[nn.Module] = []
        if expand != 1:
            layers.append(ConvBNReLU6(ci, hidden, kernel=1))
        layers += [ConvBNReLU6(hidden, hidden, stride=stride, groups=hidden),  # depthwise
                   nn.Conv2d(hidden, co, 1, bias=False), nn.BatchNorm2d(co)]
        self.conv = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.conv(x) if self.use_res_connect else self.conv(x)


class MobileNetV2(nn.Module):
    """torchvision's MobileNetV2 at width 0.25 with a shortened (t, c, n, s) table."""

    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        settings = [(1, 8, 1, 1), (6, 12, 2, 2), (6, 16, 2, 2), (6, 24, 1, 1)]
        ci, last = 8, 64
        features: list[nn.Module] = [ConvBNReLU6(3, ci, stride=2)]
        for t, c, n, s in settings:
            for i in range(n):
                features.append(InvertedResidual(ci, c, s if i == 0 else 1, t))
                ci = c
        features.append(ConvBNReLU6(ci, last, kernel=1))
        self.features = nn.Sequential(*features)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(last, classes))
        _randomise_bn(self)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.adaptive_avg_pool2d(self.features(x), (1, 1))
        return self.classifier(torch.flatten(x, 1))


# ---- GPT-2 (HF transformers' GPT2Model / nanoGPT) ----------------------------------------------

@dataclass
class GPTConfig:
    vocab: int = 97
    block: int = 16
    layers: int = 2
    heads: int = 4
    d: int = 32
    sdpa: bool = False
    """nanoGPT's `F.scaled_dot_product_attention(is_causal=True)` instead of HF's explicit
    tril-buffer mask + torch.where."""


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.c_attn = nn.Linear(cfg.d, 3 * cfg.d)
        self.c_proj = nn.Linear(cfg.d, cfg.d)
        self.heads, self.d, self.sdpa = cfg.heads, cfg.d, cfg.sdpa
        self.register_buffer("bias", torch.tril(torch.ones(cfg.block, cfg.block, dtype=torch.bool))
                             .view(1, 1, cfg.block, cfg.block), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.size()
        q, k, v = self.c_attn(x).split(self.d, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        if self.sdpa:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(v.size(-1))
            mask = self.bias[:, :, :t, :t]
            w = torch.where(mask, w, torch.tensor(torch.finfo(w.dtype).min, dtype=w.dtype))
            y = torch.matmul(F.softmax(w, dim=-1), v)
        return self.c_proj(y.transpose(1, 2).contiguous().view(b, t, c))


class NewGELU(nn.Module):
    """GPT-2's gelu_new, written out as HF does."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi)
                                           * (x + 0.044715 * torch.pow(x, 3.0))))


class GPTBlock(nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(cfg.d), nn.LayerNorm(cfg.d)
        self.attn = CausalSelfAttention(cfg)
        act: nn.Module = nn.GELU(approximate="tanh") if cfg.sdpa else NewGELU()
        self.mlp = nn.Sequential(nn.Linear(cfg.d, 4 * cfg.d), act, nn.Linear(4 * cfg.d, cfg.d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2(nn.Module):
    """Token + position embeddings, pre-LN blocks, final LayerNorm, lm head tied to wte."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.wte, self.wpe = nn.Embedding(cfg.vocab, cfg.d), nn.Embedding(cfg.block, cfg.d)
        self.h = nn.ModuleList(GPTBlock(cfg) for _ in range(cfg.layers))
        self.ln_f = nn.LayerNorm(cfg.d)
        self.lm_head = nn.Linear(cfg.d, cfg.vocab, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(0, idx.size(1), dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


# ---- BERT (HF transformers' BertModel) ---------------------------------------------------------

class BertLayer(nn.Module):
    def __init__(self, d: int, heads: int, ff: int) -> None:
        super().__init__()
        self.heads, self.dh = heads, d // heads
        self.query, self.key, self.value = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.attn_out, self.ln1 = nn.Linear(d, d), nn.LayerNorm(d, eps=1e-12)
        self.inter, self.out, self.ln2 = nn.Linear(d, ff), nn.Linear(ff, d), nn.LayerNorm(
            d, eps=1e-12)

    def _heads(self, x: torch.Tensor) -> torch.Tensor:
        return x.view((*x.size()[:-1], self.heads, self.dh)).permute(0, 2, 1, 3)

    def forward(self, x: torch.Tensor, ext_mask: torch.Tensor) -> torch.Tensor:
        q, k, v = self._heads(self.query(x)), self._heads(self.key(x)), self._heads(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.dh) + ext_mask
        ctx = torch.matmul(F.softmax(scores, dim=-1), v).permute(0, 2, 1, 3).contiguous()
        ctx = ctx.view((*ctx.size()[:-2], self.heads * self.dh))
        x = self.ln1(self.attn_out(ctx) + x)
        return self.ln2(self.out(F.gelu(self.inter(x))) + x)


class Bert(nn.Module):
    """Word + position + token-type embeddings, LayerNorm, post-LN layers with the additive mask
    `(1 - mask) * finfo.min` built from an int64 attention mask, and the tanh pooler on [CLS]."""

    def __init__(self, vocab: int = 101, d: int = 32, heads: int = 4, ff: int = 64,
                 layers: int = 2, max_pos: int = 32) -> None:
        super().__init__()
        self.word = nn.Embedding(vocab, d)
        self.pos, self.token_type = nn.Embedding(max_pos, d), nn.Embedding(2, d)
        self.ln = nn.LayerNorm(d, eps=1e-12)
        self.register_buffer("position_ids", torch.arange(max_pos).expand((1, -1)),
                             persistent=False)
        self.layers = nn.ModuleList(BertLayer(d, heads, ff) for _ in range(layers))
        self.pooler = nn.Linear(d, d)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor]:
        seq = input_ids.size(1)
        pos = self.position_ids[:, :seq]
        types = torch.zeros_like(input_ids)
        x = self.ln(self.word(input_ids) + self.token_type(types) + self.pos(pos))
        ext = attention_mask[:, None, None, :].to(x.dtype)
        ext = (1.0 - ext) * torch.finfo(x.dtype).min
        for layer in self.layers:
            x = layer(x, ext)
        return x, torch.tanh(self.pooler(x[:, 0]))


# ---- ViT (timm's VisionTransformer) ------------------------------------------------------------

class ViTBlock(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(d, eps=1e-6), nn.LayerNorm(d, eps=1e-6)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def attn(self, x: torch.Tensor) -> torch.Tensor:
        b, n, c = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        a = (q * (c // self.heads) ** -0.5) @ k.transpose(-2, -1)
        x = (a.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, n, c)
        return self.proj(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


class ViT(nn.Module):
    """Patch embedding (Conv with stride = kernel), flatten(2).transpose(1, 2), class token
    expanded and concatenated, position embedding added, pre-LN blocks, final norm, head on
    token 0."""

    def __init__(self, image: int = 16, patch: int = 4, d: int = 32, heads: int = 4,
                 depth: int = 2, classes: int = 10) -> None:
        super().__init__()
        self.patch_embed = nn.Conv2d(3, d, patch, patch)
        self.cls_token = nn.Parameter(torch.randn(1, 1, d) * 0.02)
        self.pos_embed = nn.Parameter(torch.randn(1, (image // patch) ** 2 + 1, d) * 0.02)
        self.blocks = nn.Sequential(*(ViTBlock(d, heads) for _ in range(depth)))
        self.norm = nn.LayerNorm(d, eps=1e-6)
        self.head = nn.Linear(d, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1)
        x = self.norm(self.blocks(x + self.pos_embed))
        return self.head(x[:, 0])


# ---- the zoo -----------------------------------------------------------------------------------

@dataclass
class Case:
    build: Callable[[], nn.Module]
    inputs: Callable[[int, torch.Generator], tuple[torch.Tensor, ...]]
    """Example inputs for a batch size."""
    names: tuple[str, ...] = ("x",)


def _images(size: int) -> Callable[[int, torch.Generator], tuple[torch.Tensor, ...]]:
    return lambda batch, gen: (torch.randn(batch, 3, size, size, generator=gen),)


def _tokens(vocab: int, seq: int) -> Callable[[int, torch.Generator], tuple[torch.Tensor, ...]]:
    return lambda batch, gen: (torch.randint(0, vocab, (batch, seq), generator=gen),)


def _bert_inputs(batch: int, gen: torch.Generator) -> tuple[torch.Tensor, ...]:
    ids = torch.randint(0, 101, (batch, 12), generator=gen)
    mask = torch.ones(batch, 12, dtype=torch.long)
    mask[0, 9:] = 0  # padding on the first sequence
    return ids, mask


REAL_ZOO: dict[str, Case] = {
    "resnet18": Case(lambda: ResNet(BasicBlock, [2, 2, 2, 2]), _images(32)),
    "resnet50": Case(lambda: ResNet(Bottleneck, [1, 1, 1, 1], width=8), _images(32)),
    "mobilenet_v2": Case(MobileNetV2, _images(32)),
    "gpt2": Case(lambda: GPT2(GPTConfig()), _tokens(97, 16), ("idx",)),
    "gpt2_sdpa": Case(lambda: GPT2(GPTConfig(sdpa=True)), _tokens(97, 16), ("idx",)),
    "bert": Case(Bert, _bert_inputs, ("input_ids", "attention_mask")),
    "vit": Case(ViT, _images(16)),
}


def build(name: str) -> nn.Module:
    """Model `name` in eval mode with seeded weights."""
    torch.manual_seed(0)
    return REAL_ZOO[name].build().eval()


def example(name: str, batch: int, seed: int = 0) -> tuple[torch.Tensor, ...]:
    return REAL_ZOO[name].inputs(batch, torch.Generator().manual_seed(seed))
