# A decoder layer's tail at a real model's widths (Llama-style, hidden 2048, intermediate 8192,
# vocab 32000, 512 tokens of prefill): o_proj, residual, RMSNorm, gated MLP, residual, RMSNorm,
# lm_head. 23 ops, more than one search covers: the search cuts it into pieces and joins them.
program decoder_tail_512_h2048
input X f16 [512, 2048]
input Attn f16 [512, 2048]
input Wo f16 [2048, 2048]
input Wn f16 [1, 2048]
input Wg f16 [2048, 8192]
input Wu f16 [2048, 8192]
input Wd f16 [8192, 2048]
input Wn2 f16 [1, 2048]
input Wlm f16 [2048, 32000]
H = add(X, matmul(Attn, Wo))
N = mul(div(H, sqrt(add_scalar(scale(reduce_sum(square(H), dim=1), c=0.00048828125), c=1e-06))), Wn)
M = mul(silu(matmul(N, Wg)), matmul(N, Wu))
H2 = add(H, matmul(M, Wd))
N2 = mul(div(H2, sqrt(add_scalar(scale(reduce_sum(square(H2), dim=1), c=0.00048828125), c=1e-06))), Wn2)
L = matmul(N2, Wlm)
output H2
output L
