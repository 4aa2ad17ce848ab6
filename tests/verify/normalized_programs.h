// Small programs with ops the finite field leaves uninterpreted (rms_norm's sqrt, silu), and
// schedules of them built with the graph builders. Each schedule builder takes the choices a
// mutation flips, so a test names a wrong (or correct) variant by what it changes. Shared by
// the verifier's mutation suite and the search tests.
#pragma once

#include <cmath>

#include "graph/builder.h"
#include "graph/program_text.h"

namespace mugraph::verify::testing {

// Y = rms_norm(X) · W over X's last dim: the shipped rmsnorm_matmul program at a small shape.
inline graph::Program rmsNormMatmulProgram() {
  return graph::parseProgramText(R"(program rmsnorm_matmul_small
input X f16 [16, 256]
input W f16 [256, 384]
Y = matmul(rms_norm(X, dim=1), W)
output Y
)",
                                 "rmsnorm_matmul_small.mg");
}

// A gated MLP: O = silu(X·W1) ⊙ (X·W3).
inline graph::Program mlpProgram() {
  return graph::parseProgramText(R"(program mlp_small
input X f16 [8, 64]
input W1 f16 [64, 96]
input W3 f16 [64, 96]
O = mul(silu(matmul(X, W1)), matmul(X, W3))
output O
)",
                                 "mlp_small.mg");
}

// QK-norm: Q and K normalized over the head dim (Q [h, n, d], K stored as [h, d, m]) before the
// logits S = Q·K.
inline graph::Program qkNormProgram() {
  return graph::parseProgramText(R"(program qk_norm_small
input Q f16 [2, 32, 64]
input K f16 [2, 64, 48]
S = matmul(rms_norm(Q, dim=2), rms_norm(K, dim=1))
output S
)",
                                 "qk_norm_small.mg");
}

// The fused schedule the search finds for rmsnorm_matmul: W split over the grid, a for-loop
// over the hidden dim accumulating X·W and the sum of squares, the root divided out last.
struct RmsNormChoices {
  int64_t grid = 4;
  int64_t forloop = 4;
  graph::OpKind root = graph::OpKind::Sqrt;
  bool square = true;              // square before the sum
  double meanScale = 1.0 / 256;    // 1/n of the mean
  bool normalizeEachTile = false;  // each tile's product divided by its own tile's root
  bool rootBeforeMean = false;     // sqrt(sum)·sqrt(1/n): relies on sqrt(a·b) = sqrt(a)·sqrt(b)
  bool normInBlock = false;        // rms_norm op on the whole row, then the matmul (forloop 1)
};

inline graph::KernelGraph rmsNormMatmulSchedule(const graph::Program& program,
                                                const RmsNormChoices& c) {
  using graph::OpKind;
  graph::GraphBuilder g = graph::GraphBuilder::withInputsOf(program, "rmsnorm_matmul_fused");
  const std::vector<graph::TensorId>& in = g.graph().inputs;
  graph::BlockGraphBuilder k({c.grid, 1, 1}, 128, c.forloop, {g.desc(in[0]), g.desc(in[1])});
  const graph::TensorId x = k.input(0, {-1, -1, -1}, c.normInBlock ? -1 : 1);
  const graph::TensorId w = k.input(1, {1, -1, -1}, c.normInBlock ? -1 : 0);
  graph::TensorId y;
  if (c.normInBlock) {
    y = k.op(OpKind::Matmul, {k.op(OpKind::RmsNorm, {x}, {.dim = 1}), w});
  } else {
    const auto root = [&](graph::TensorId sum) {
      if (c.rootBeforeMean) {
        return k.op(OpKind::Scale, {k.op(c.root, {sum})}, {.scale = std::sqrt(c.meanScale)});
      }
      return k.op(c.root, {k.op(OpKind::Scale, {sum}, {.scale = c.meanScale})});
    };
    const graph::TensorId squares = c.square ? k.op(OpKind::Square, {x}) : x;
    const graph::TensorId partial = k.op(OpKind::ReduceSum, {squares}, {.dim = 1, .to = 1});
    const graph::TensorId product = k.op(OpKind::Matmul, {x, w});
    y = c.normalizeEachTile ? k.op(OpKind::AccumSum, {k.op(OpKind::Div, {product, root(partial)})})
                            : k.op(OpKind::Div, {k.op(OpKind::AccumSum, {product}),
                                                 root(k.op(OpKind::AccumSum, {partial}))});
  }
  k.output(y, {1, -1, -1});
  g.output(g.blockGraph("rmsnorm_matmul", k.block(), in, {{"Y", graph::DType::F16}})[0]);
  return g.finish();
}

// rms_norm spelled out in predefined ops, X / sqrt(mean over `dim` of X²), then the matmul.
inline graph::KernelGraph rmsNormMatmulUnfused(const graph::Program& program, int dim) {
  using graph::OpKind;
  graph::GraphBuilder g = graph::GraphBuilder::withInputsOf(program, "rmsnorm_matmul_unfused");
  const graph::TensorId x = g.graph().inputs[0];
  const double n = static_cast<double>(g.desc(x).shape.at(dim));
  const graph::TensorId sum =
      g.op(OpKind::ReduceSum, {g.op(OpKind::Square, {x})}, {.dim = dim, .to = 1});
  const graph::TensorId root = g.op(OpKind::Sqrt, {g.op(OpKind::Scale, {sum}, {.scale = 1 / n})});
  g.output(g.op(OpKind::Matmul, {g.op(OpKind::Div, {x, root}), g.graph().inputs[1]}, {}, "Y"));
  return g.finish();
}

// The MLP in one block graph: both products accumulated over a for-loop, the gate after.
struct MlpChoices {
  int64_t grid = 4;
  int64_t forloop = 4;
  graph::OpKind gate = graph::OpKind::Silu;
  bool gateW3 = false;              // the gate applied to X·W3 instead of X·W1
  bool gateEachTile = false;        // the gate applied to each tile's partial product
  bool upFirst = false;             // mul(X·W3, gate) instead of mul(gate, X·W3)
  bool upIsW1 = false;              // X·W1 used for both factors
  bool gateInSecondKernel = false;  // the block graph stores both products; predefined ops gate
};

inline graph::KernelGraph mlpSchedule(const graph::Program& program, const MlpChoices& c) {
  using graph::OpKind;
  graph::GraphBuilder g = graph::GraphBuilder::withInputsOf(program, "mlp_fused");
  const std::vector<graph::TensorId> in = g.graph().inputs;
  graph::BlockGraphBuilder k({c.grid, 1, 1}, 128, c.forloop,
                             {g.desc(in[0]), g.desc(in[1]), g.desc(in[2])});
  const graph::TensorId x = k.input(0, {-1, -1, -1}, 1);
  const graph::TensorId w1 = k.input(1, {1, -1, -1}, 0);
  const graph::TensorId w3 = k.input(2, {1, -1, -1}, 0);
  const graph::TensorId h1 = k.op(OpKind::Matmul, {x, w1});
  const graph::TensorId h3 = k.op(OpKind::Matmul, {x, w3});
  const graph::TensorId a1 = k.op(OpKind::AccumSum, {c.gateEachTile ? k.op(c.gate, {h1}) : h1});
  const graph::TensorId a3 = k.op(OpKind::AccumSum, {h3});
  if (c.gateInSecondKernel) {
    k.output(a1, {1, -1, -1});
    k.output(a3, {1, -1, -1});
    const std::vector<graph::TensorId> h = g.blockGraph(
        "mlp_products", k.block(), in, {{"H1", graph::DType::F16}, {"H3", graph::DType::F16}});
    g.output(g.op(OpKind::Mul, {g.op(c.gate, {h[0]}), h[1]}, {}, "O"));
    return g.finish();
  }
  const graph::TensorId gated = c.gateEachTile ? a1 : k.op(c.gate, {c.gateW3 ? a3 : a1});
  const graph::TensorId up = c.upIsW1 ? a1 : (c.gateW3 ? a1 : a3);
  k.output(k.op(OpKind::Mul, c.upFirst ? std::vector{up, gated} : std::vector{gated, up}),
           {1, -1, -1});
  g.output(g.blockGraph("mlp", k.block(), in, {{"O", graph::DType::F16}})[0]);
  return g.finish();
}

// QK-norm in one block graph: heads over grid x, key columns over grid y, a for-loop over the
// head dim accumulating Q·K and both sums of squares; both roots divided out last.
struct QkNormChoices {
  int64_t keySplits = 2;
  int64_t forloop = 4;
  graph::OpKind root = graph::OpKind::Sqrt;
  bool squareQ = true;       // Q squared before its sum
  bool kNormFromQ = false;   // K divided by Q's root
  bool jointRoot = false;    // sqrt(mean q² · mean k²): relies on sqrt(a)·sqrt(b) = sqrt(a·b)
  bool normInBlock = false;  // rms_norm ops on whole rows, then the matmul (forloop 1)
};

inline graph::KernelGraph qkNormSchedule(const graph::Program& program, const QkNormChoices& c) {
  using graph::OpKind;
  graph::GraphBuilder g = graph::GraphBuilder::withInputsOf(program, "qk_norm_fused");
  const std::vector<graph::TensorId>& in = g.graph().inputs;
  graph::BlockGraphBuilder k({2, c.keySplits, 1}, 128, c.forloop, {g.desc(in[0]), g.desc(in[1])});
  const graph::TensorId q = k.input(0, {0, -1, -1}, c.normInBlock ? -1 : 2);
  const int keyAxis = c.keySplits > 1 ? 2 : -1;
  const graph::TensorId kt = k.input(1, {0, keyAxis, -1}, c.normInBlock ? -1 : 1);
  graph::TensorId s;
  if (c.normInBlock) {
    s = k.op(OpKind::Matmul,
             {k.op(OpKind::RmsNorm, {q}, {.dim = 2}), k.op(OpKind::RmsNorm, {kt}, {.dim = 1})});
  } else {
    const double inverseD = 1.0 / 64;
    const auto meanSquare = [&](graph::TensorId t, int dim, bool square) {
      const graph::TensorId squares = square ? k.op(OpKind::Square, {t}) : t;
      const graph::TensorId sum =
          k.op(OpKind::AccumSum, {k.op(OpKind::ReduceSum, {squares}, {.dim = dim, .to = 1})});
      return k.op(OpKind::Scale, {sum}, {.scale = inverseD});
    };
    const graph::TensorId logits = k.op(OpKind::AccumSum, {k.op(OpKind::Matmul, {q, kt})});
    const graph::TensorId mq = meanSquare(q, 2, c.squareQ);
    const graph::TensorId mk = meanSquare(kt, 1, true);
    if (c.jointRoot) {
      s = k.op(OpKind::Div, {logits, k.op(c.root, {k.op(OpKind::Mul, {mq, mk})})});
    } else {
      const graph::TensorId rq = k.op(c.root, {mq});
      const graph::TensorId rk = c.kNormFromQ ? rq : k.op(c.root, {mk});
      s = k.op(OpKind::Div, {k.op(OpKind::Div, {logits, rq}), rk});
    }
  }
  k.output(s, {0, keyAxis, -1});
  g.output(g.blockGraph("qk_norm", k.block(), in, {{"S", graph::DType::F16}})[0]);
  return g.finish();
}

// QK-norm in predefined ops with the norms over the given dims of Q and K.
inline graph::KernelGraph qkNormKernelLevel(const graph::Program& program, int qDim, int kDim) {
  using graph::OpKind;
  graph::GraphBuilder g = graph::GraphBuilder::withInputsOf(program, "qk_norm_predefined");
  const std::vector<graph::TensorId>& in = g.graph().inputs;
  const graph::TensorId qn = g.op(OpKind::RmsNorm, {in[0]}, {.dim = qDim});
  const graph::TensorId kn = g.op(OpKind::RmsNorm, {in[1]}, {.dim = kDim});
  g.output(g.op(OpKind::Matmul, {qn, kn}, {}, "S"));
  return g.finish();
}

}  // namespace mugraph::verify::testing
