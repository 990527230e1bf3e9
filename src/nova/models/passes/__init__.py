"""Graph passes of nova.models: shape inference with constant folding (propagate), rewrites
(rewrite: BatchNorm folding, canonicalisation, transpose folding, float16/bfloat16 conversion) and
fusion grouping (fusion)."""
