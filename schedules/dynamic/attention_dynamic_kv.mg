program attention_dynamic_kv
dim s in [1, 2048]
input Q f16 [2, 16, 32]
input K f16 [2, 32, s]
input V f16 [2, s, 32]
A = matmul(Q, K)
M = reduce_max(A, dim=2)
t0 = sub(A, M)
E = exp(t0)
L = reduce_sum(E, dim=2)
t1 = matmul(E, V)
O = div(t1, L)
output O
