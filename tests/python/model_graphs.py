"""Aten graphs of real `transformers` decoder architectures, as the mugraph backend sees them,
and the cases whole-model runs time (a prefill; a decode step over a StaticCache):
random weights, small configs (GQA, 2 layers), traced by torch.compile through AOTAutograd on
the CPU. Shared by the CPU tests and the GPU test."""
import functools

import torch


def configs(hidden=128, layers=2, vocab=512):
    from transformers import (GemmaConfig, GPT2Config, GPTNeoXConfig, LlamaConfig, MistralConfig,
                              Phi3Config, PhiConfig, Qwen3Config)

    heads = max(4, hidden // 64)
    common = dict(hidden_size=hidden, intermediate_size=hidden * 11 // 4 // 8 * 8,
                  num_hidden_layers=layers, num_attention_heads=heads,
                  num_key_value_heads=max(2, heads // 4), vocab_size=vocab,
                  max_position_embeddings=4096, rms_norm_eps=1e-6, tie_word_embeddings=False)
    # LayerNorm and GELU architectures (no GQA): GPT-2 (tanh GELU written out, a fused QKV
    # projection), GPT-NeoX (exact GELU, parallel residual, partial RoPE), Phi (tanh GELU,
    # parallel residual, partial RoPE)
    plain = dict(num_hidden_layers=layers, num_attention_heads=heads, vocab_size=vocab,
                 bos_token_id=0, eos_token_id=0, tie_word_embeddings=False)
    return {
        "llama": LlamaConfig(**common),
        "mistral": MistralConfig(**common, sliding_window=None),
        "qwen3": Qwen3Config(**common, head_dim=hidden // heads),
        "gpt2": GPT2Config(n_embd=hidden, n_layer=layers, n_head=heads, vocab_size=vocab,
                           n_positions=8192, bos_token_id=0, eos_token_id=0,
                           tie_word_embeddings=False),
        "gpt_neox": GPTNeoXConfig(hidden_size=hidden, intermediate_size=4 * hidden,
                                  max_position_embeddings=8192, **plain),
        "phi": PhiConfig(hidden_size=hidden, intermediate_size=4 * hidden,
                         max_position_embeddings=8192, pad_token_id=0, **plain),
        # Head dims other than 64: Phi-3 (96: heads of hidden / 96, no GQA, a fused QKV and a
        # fused gate/up projection) and Gemma (256 whatever the width, GeGLU, scaled embeddings).
        "phi3": Phi3Config(**{**common, "num_attention_heads": max(1, hidden // 96),
                              "num_key_value_heads": max(1, hidden // 96)},
                           pad_token_id=0, bos_token_id=0, eos_token_id=0),
        "gemma": GemmaConfig(**{**common, "num_attention_heads": max(1, hidden // 256),
                                "num_key_value_heads": max(1, hidden // 1024)},
                             head_dim=256, pad_token_id=0, bos_token_id=0, eos_token_id=0),
    }


def more_configs(hidden=128, layers=2, vocab=512):
    """Architectures the backend has no case for, to partition as a new user's model would be:
    RoPE written other ways (interleaved: GPT-J, partial or whole, Cohere; partial: StableLM,
    Falcon), LayerNorm and biases (OPT, BLOOM with ALiBi, StarCoder2), norms scaled by
    1 + weight (Gemma 2 and 3, with logit soft-capping in Gemma 2), QK-norms (OLMo 2), scaled
    residuals (Granite) and mixtures of experts (Mixtral, Qwen3-MoE). Only those the installed
    transformers has."""
    import transformers as t

    heads = max(4, hidden // 64)
    common = dict(hidden_size=hidden, intermediate_size=hidden * 11 // 4 // 8 * 8,
                  num_hidden_layers=layers, num_attention_heads=heads,
                  num_key_value_heads=max(2, heads // 4), vocab_size=vocab,
                  max_position_embeddings=4096, tie_word_embeddings=False)
    ids = dict(pad_token_id=0, bos_token_id=0, eos_token_id=0)
    head = hidden // heads
    made = {
        "qwen2": lambda: t.Qwen2Config(**common),
        "stablelm": lambda: t.StableLmConfig(**common, **ids),
        "gemma2": lambda: t.Gemma2Config(**common, head_dim=head, **ids),
        "gemma3": lambda: t.Gemma3TextConfig(**common, head_dim=head, **ids),
        "olmo2": lambda: t.Olmo2Config(**common, **ids),
        "granite": lambda: t.GraniteConfig(**common, **ids),
        "starcoder2": lambda: t.Starcoder2Config(**common, **ids),
        "cohere": lambda: t.CohereConfig(**common, **ids),
        "mixtral": lambda: t.MixtralConfig(**common, num_local_experts=4, num_experts_per_tok=2),
        "qwen3_moe": lambda: t.Qwen3MoeConfig(**common, num_experts=4, num_experts_per_tok=2,
                                              moe_intermediate_size=hidden // 2, head_dim=head),
        "falcon": lambda: t.FalconConfig(hidden_size=hidden, num_hidden_layers=layers,
                                         num_attention_heads=heads, vocab_size=vocab, **ids),
        "opt": lambda: t.OPTConfig(hidden_size=hidden, ffn_dim=4 * hidden,
                                   num_hidden_layers=layers, num_attention_heads=heads,
                                   vocab_size=vocab, word_embed_proj_dim=hidden, **ids),
        "bloom": lambda: t.BloomConfig(hidden_size=hidden, n_layer=layers, n_head=heads,
                                       vocab_size=vocab, **ids),
        "gptj": lambda: t.GPTJConfig(n_embd=hidden, n_layer=layers, n_head=heads,
                                     vocab_size=vocab, rotary_dim=head // 2, **ids),
        # every dim rotated (the pass-through slice empty): RoPE then the head transpose, which
        # joins RoPE's subgraph
        "gptj_full_rotary": lambda: t.GPTJConfig(n_embd=hidden, n_layer=layers, n_head=heads,
                                                 vocab_size=vocab, rotary_dim=head, **ids),
    }
    found = {}
    for name, make in made.items():
        try:
            found[name] = make()
        except (AttributeError, TypeError, ValueError):  # not in this transformers
            continue
    return found


def causal_lm(name, dtype=torch.float16, device="cpu", **sizes):
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    every = configs(**sizes)
    if name not in every:
        every = more_configs(**sizes)
    model = AutoModelForCausalLM.from_config(every[name], dtype=dtype)
    return model.to(device).eval()


def aten_graphs(model, *args, **kwargs):
    """The aten-level GraphModules torch.compile hands a backend for model(*args, **kwargs)."""
    return traced_graphs(model, lambda m: m(*args, **kwargs))


def traced_graphs(model, step):
    """The aten-level GraphModules torch.compile hands a backend for step(model)."""
    from functorch.compile import make_boxed_func

    from mugraph.backend import aot

    graphs = []

    def capture(gm, example_inputs):
        graphs.append(gm)
        return make_boxed_func(gm.forward)

    torch._dynamo.reset()
    compiled = torch.compile(model, backend=aot(capture), dynamic=False)
    with torch.no_grad():
        step(compiled)
    return graphs


def prefill_case(model, tokens, vocab, batch=1):
    ids = torch.randint(0, vocab, (batch, tokens), device=model.device)
    return (lambda m: m(input_ids=ids, use_cache=False).logits), None


def decode_case(model, context, vocab, batch=1):
    """One token per sequence of `batch` at the last position of a StaticCache of `context`
    positions whose keys and values are normal random values at the spread of the model's own
    (measured on a short prompt), so no 4K-token eager prefill is needed."""
    from transformers import StaticCache

    try:  # transformers 5
        cache = StaticCache(config=model.config, max_cache_len=context)
    except TypeError:  # transformers 4
        cache = StaticCache(config=model.config, max_batch_size=batch, max_cache_len=context,
                            device=model.device, dtype=model.dtype)
    device = model.device
    prompt = torch.randint(0, vocab, (batch, 16), device=device)
    with torch.no_grad():
        model(input_ids=prompt, past_key_values=cache, use_cache=True,
              cache_position=torch.arange(16, device=device))
    if hasattr(cache, "layers"):
        kv = [t for layer in cache.layers for t in (layer.keys, layer.values)]
        # every tensor a layer holds (keys, values, and counters such as cumulative_length)
        state = [v for layer in cache.layers for v in vars(layer).values()
                 if isinstance(v, torch.Tensor)]
    else:
        kv = list(cache.key_cache) + list(cache.value_cache)
        state = kv
    positions = kv[0].shape[-2]
    for t in kv:
        spread = t[..., :16, :].float().std().item()
        t.normal_(0.0, spread)
    tensors = state
    token = torch.randint(0, vocab, (batch, 1), device=device)
    position = torch.tensor([positions - 1], device=device)
    with torch.no_grad():  # the cache's own state settles on its first step
        model(input_ids=token, past_key_values=cache, use_cache=True, cache_position=position)
    snapshot = [t.clone() for t in tensors]

    def restore():
        for t, saved in zip(tensors, snapshot):
            t.copy_(saved)

    def step(m):
        return m(input_ids=token, past_key_values=cache, use_cache=True,
                 cache_position=position).logits

    return step, restore


def add_case_arguments(parser):
    """The models, sizes, cases and search time of a whole-model run (model_bench.py,
    model_search.py)."""
    parser.add_argument("--models", default="llama,qwen3,mistral")
    parser.add_argument("--hidden", type=int, default=2048)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--prefill", default="512,2048")
    parser.add_argument("--decode", default="4096")
    parser.add_argument("--time-limit", type=int, default=60, help="search seconds per subgraph")
    parser.add_argument("--batch", type=int, default=1, help="sequences per prefill or decode step")


def cases(args):
    """(label, case function, size) for each prefill and decode length of the arguments."""
    batch = getattr(args, "batch", 1)
    tag = f" x{batch}" if batch != 1 else ""
    prefill = functools.partial(prefill_case, batch=batch)
    decode = functools.partial(decode_case, batch=batch)
    found = [(f"prefill {t}{tag}", prefill, int(t)) for t in args.prefill.split(",") if t]
    found += [(f"decode {c}{tag}", decode, int(c)) for c in args.decode.split(",") if c]
    return found
