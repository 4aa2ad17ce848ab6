#!/usr/bin/env python3
"""Exports real `transformers` decoder architectures to ONNX, as a user of mugraph would.

Llama, Mistral and Qwen3 (QK-norm) causal LMs with random, seeded weights, in f16, a static
batch (default 1; files of another batch b are named *_b<b>.onnx) and prompt length, through
the default (torch.export based) exporter with the model's default attention implementation
(SDPA, which the exporter decomposes into MatMul, Softmax and a NaN guard). Small configs
keep the files small enough to commit as test models; the `--hidden` flag gives real widths
for measurements on a GPU machine.

Needs torch, transformers and onnx (the GPU machine has them); runs on the CPU:
    python3 tools/python/export_hf_models.py --out tests/onnx_import/models
"""
import argparse
import os
import sys

import torch

SEQ = 16


def configs(hidden, layers, vocab):
    from transformers import LlamaConfig, MistralConfig, Qwen3Config

    heads = max(4, hidden // 64)
    common = dict(hidden_size=hidden, intermediate_size=hidden * 11 // 4 // 8 * 8,
                  num_hidden_layers=layers, num_attention_heads=heads,
                  num_key_value_heads=heads // 4 if heads >= 8 else 2, vocab_size=vocab,
                  max_position_embeddings=4096, rms_norm_eps=1e-6, tie_word_embeddings=False)
    return [
        ("hf_llama", LlamaConfig(**common)),
        ("hf_mistral", MistralConfig(**common, sliding_window=None)),
        ("hf_qwen3", Qwen3Config(**common, head_dim=hidden // heads)),
    ]


class LogitsOnly(torch.nn.Module):
    """The causal LM's logits for a prompt, without the cache (the prefill graph)."""

    def __init__(self, lm):
        super().__init__()
        self.lm = lm

    def forward(self, input_ids):
        return self.lm(input_ids=input_ids, use_cache=False).logits


def describe(path):
    import onnx

    model = onnx.load(path)
    ops = {}
    for n in model.graph.node:
        ops[n.op_type] = ops.get(n.op_type, 0) + 1
    size = os.path.getsize(path)
    return f"{os.path.basename(path)}: {len(model.graph.node)} nodes, {size} bytes, {ops}"


def main():
    from transformers import AutoModelForCausalLM

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--vocab", type=int, default=512)
    parser.add_argument("--seq", type=int, default=SEQ)
    parser.add_argument("--batch", type=int, default=1, help="prompts per input (static)")
    parser.add_argument("--models", default="hf_llama,hf_mistral,hf_qwen3")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    failures = 0
    for name, config in configs(args.hidden, args.layers, args.vocab):
        if name not in args.models.split(","):
            continue
        torch.manual_seed(0)
        try:
            lm = AutoModelForCausalLM.from_config(config, torch_dtype=torch.float16).eval()
            ids = torch.randint(0, args.vocab, (args.batch, args.seq))
            path = os.path.join(args.out, name + (f"_b{args.batch}" if args.batch != 1 else "") + ".onnx")
            with torch.no_grad():
                torch.onnx.export(LogitsOnly(lm), (ids,), path, input_names=["input_ids"],
                                  output_names=["logits"], dynamo=True, external_data=False)
            print(describe(path), flush=True)
        except Exception as e:  # report every model, then fail
            failures += 1
            print(f"{name}: {type(e).__name__}: {e}", file=sys.stderr)
    import transformers

    print(f"torch {torch.__version__}, transformers {transformers.__version__}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
