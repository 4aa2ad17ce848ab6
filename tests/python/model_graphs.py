"""Aten graphs of real `transformers` decoder architectures, as the mugraph backend sees them:
random weights, small configs (GQA, 2 layers), traced by torch.compile through AOTAutograd on
the CPU. Shared by the CPU tests and the GPU test."""
import torch


def configs(hidden=128, layers=2, vocab=512):
    from transformers import LlamaConfig, MistralConfig, Qwen3Config

    heads = max(4, hidden // 64)
    common = dict(hidden_size=hidden, intermediate_size=hidden * 11 // 4 // 8 * 8,
                  num_hidden_layers=layers, num_attention_heads=heads,
                  num_key_value_heads=max(2, heads // 4), vocab_size=vocab,
                  max_position_embeddings=4096, rms_norm_eps=1e-6, tie_word_embeddings=False)
    return {
        "llama": LlamaConfig(**common),
        "mistral": MistralConfig(**common, sliding_window=None),
        "qwen3": Qwen3Config(**common, head_dim=hidden // heads),
    }


def causal_lm(name, dtype=torch.float16, device="cpu", **sizes):
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(configs(**sizes)[name], dtype=dtype)
    return model.to(device).eval()


def aten_graphs(model, *args, **kwargs):
    """The aten-level GraphModules torch.compile hands a backend for model(*args, **kwargs)."""
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd

    graphs = []

    def capture(gm, example_inputs):
        graphs.append(gm)
        return make_boxed_func(gm.forward)

    torch._dynamo.reset()
    compiled = torch.compile(model, backend=aot_autograd(fw_compiler=capture), dynamic=False)
    with torch.no_grad():
        compiled(*args, **kwargs)
    return graphs
