# QK-norm attention written without max subtraction, as a model might: exp of the logits of
# RMS-normalized queries and keys, divided by its row sum. The logits of normalized vectors
# have standard deviation sqrt(d) = 8 whatever the inputs' spread, so exp overflows f16 unless
# the row max is subtracted: the search's safe_softmax rewrite must give the safe form.
program qk_norm_attention
input Q f16 [8, 256, 64]
input K f16 [8, 64, 256] layout=transposed
input V f16 [8, 256, 64]
E = exp(matmul(rms_norm(Q, dim=2), rms_norm(K, dim=1)))
O = matmul(div(E, reduce_sum(E, dim=2)), V)
output O
