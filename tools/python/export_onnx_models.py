#!/usr/bin/env python3
"""Exports the ONNX models the importer is tested on, with PyTorch's own exporter.

Llama-style pieces in f16, as real checkpoints are: the gated MLP (three bias-free Linear
layers, SiLU), RMSNorm with eps and a weight (upcast to f32 inside, as transformers writes
it), an attention core (MatMul, scale, Softmax, MatMul), the same with GQA's repeated KV heads, and a whole
decoder block (RMSNorm,
GQA attention with RoPE and repeated KV heads, a causal mask, the MLP, residuals). Each is
exported by the default exporter of the installed PyTorch (torch.export based in 2.9+) and,
where it still exists, by the TorchScript one (`--legacy`), whose graphs differ (Gemm, Div
by a constant, opset 17). One model keeps a dynamic sequence dim, for `--dim seq=N`.

Needs torch and onnx (the GPU machine has both); runs on the CPU:
    python3 tools/python/export_onnx_models.py --out tests/onnx_import/models
The weights are seeded, so reruns give the same values.
"""
import argparse
import math
import os
import sys

import torch
import torch.nn.functional as F
from torch import nn

HIDDEN = 128
INTERMEDIATE = 256
HEADS = 4
KV_HEADS = 2
HEAD_DIM = HIDDEN // HEADS
SEQ = 16
EPS = 1e-6
DTYPE = torch.float16


class RMSNorm(nn.Module):
    """transformers' LlamaRMSNorm: x / sqrt(mean(x²) + eps) in f32, times the weight."""

    def __init__(self, hidden, eps=EPS):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(hidden))
        self.eps = eps

    def forward(self, x):
        dtype = x.dtype
        x = x.to(torch.float32)
        variance = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(variance + self.eps)
        return self.weight * x.to(dtype)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate_proj = nn.Linear(HIDDEN, INTERMEDIATE, bias=False)
        self.up_proj = nn.Linear(HIDDEN, INTERMEDIATE, bias=False)
        self.down_proj = nn.Linear(INTERMEDIATE, HIDDEN, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class AttentionCore(nn.Module):
    def forward(self, q, k, v):
        scores = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
        return torch.matmul(torch.softmax(scores, dim=-1), v)


class GqaAttentionCore(nn.Module):
    """Grouped-query attention as transformers writes it: KV heads repeated, then attention."""

    def forward(self, q, k, v):
        n_rep = q.shape[1] // k.shape[1]
        k, v = repeat_kv(k, n_rep), repeat_kv(v, n_rep)
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(q.shape[-1])
        return torch.matmul(torch.softmax(scores, dim=-1), v)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def repeat_kv(x, n_rep):
    b, kv, s, d = x.shape
    return x[:, :, None, :, :].expand(b, kv, n_rep, s, d).reshape(b, kv * n_rep, s, d)


class DecoderBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.input_layernorm = RMSNorm(HIDDEN)
        self.q_proj = nn.Linear(HIDDEN, HEADS * HEAD_DIM, bias=False)
        self.k_proj = nn.Linear(HIDDEN, KV_HEADS * HEAD_DIM, bias=False)
        self.v_proj = nn.Linear(HIDDEN, KV_HEADS * HEAD_DIM, bias=False)
        self.o_proj = nn.Linear(HEADS * HEAD_DIM, HIDDEN, bias=False)
        self.post_attention_layernorm = RMSNorm(HIDDEN)
        self.mlp = MLP()

    def forward(self, x, cos, sin, mask):
        b, s, _ = x.shape
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(b, s, HEADS, HEAD_DIM).transpose(1, 2)
        k = self.k_proj(h).view(b, s, KV_HEADS, HEAD_DIM).transpose(1, 2)
        v = self.v_proj(h).view(b, s, KV_HEADS, HEAD_DIM).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = repeat_kv(k, HEADS // KV_HEADS)
        v = repeat_kv(v, HEADS // KV_HEADS)
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(HEAD_DIM) + mask
        attn = torch.matmul(torch.softmax(scores, dim=-1), v)
        attn = attn.transpose(1, 2).reshape(b, s, HEADS * HEAD_DIM)
        x = x + self.o_proj(attn)
        return x + self.mlp(self.post_attention_layernorm(x))


def rope_tables():
    inv_freq = 1.0 / (10000 ** (torch.arange(0, HEAD_DIM, 2).float() / HEAD_DIM))
    angles = torch.outer(torch.arange(SEQ).float(), inv_freq)
    emb = torch.cat((angles, angles), dim=-1)[None, None]
    return emb.cos().to(DTYPE), emb.sin().to(DTYPE)


def models():
    x = torch.randn(1, SEQ, HIDDEN, dtype=DTYPE)
    qkv = [torch.randn(1, 8, 128, 64, dtype=DTYPE) for _ in range(3)]
    cos, sin = rope_tables()
    mask = torch.triu(torch.full((SEQ, SEQ), -1e4), diagonal=1)[None, None].to(DTYPE)
    return [
        ("llama_mlp", MLP(), (x,), ["x"], None),
        ("rmsnorm", RMSNorm(HIDDEN), (x,), ["x"], None),
        ("attention_core", AttentionCore(), tuple(qkv), ["q", "k", "v"], None),
        ("gqa_attention_core", GqaAttentionCore(), (qkv[0], qkv[1][:, :2], qkv[2][:, :2]),
         ["q", "k", "v"], None),
        ("decoder_block", DecoderBlock(), (x, cos, sin, mask), ["x", "cos", "sin", "mask"], None),
        ("llama_mlp_dynamic_seq", MLP(), (x,), ["x"], {"x": {1: torch.export.Dim("seq")}}),
    ]


def export(name, model, args, input_names, dynamic, out, legacy):
    path = os.path.join(out, name + ("_legacy" if legacy else "") + ".onnx")
    kwargs = dict(input_names=input_names, output_names=["y"])
    if legacy:
        kwargs.update(dynamo=False, opset_version=17)
        if dynamic:
            kwargs["dynamic_axes"] = {n: {1: "seq"} for n in dynamic}
    else:
        kwargs.update(dynamo=True, external_data=False)
        if dynamic:
            kwargs["dynamic_shapes"] = dynamic
    torch.onnx.export(model, args, path, **kwargs)
    return path


def describe(path):
    import onnx

    model = onnx.load(path)
    opsets = {o.domain or "ai.onnx": o.version for o in model.opset_import}
    ops = [n.op_type for n in model.graph.node]
    return f"{os.path.basename(path)}: opsets {opsets}, {len(ops)} nodes: {' '.join(ops)}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--no-legacy", action="store_true", help="skip the TorchScript exporter")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(0)
    failures = 0
    for name, model, inputs, names, dynamic in models():
        model = model.to(DTYPE).eval()
        for legacy in ([False] if args.no_legacy else [False, True]):
            try:
                with torch.no_grad():
                    path = export(name, model, inputs, names, dynamic, args.out, legacy)
                print(describe(path), flush=True)
            except Exception as e:  # report every model, then fail
                failures += 1
                print(f"{name} ({'legacy' if legacy else 'default'} exporter): {e}", file=sys.stderr)
    print(f"torch {torch.__version__}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
