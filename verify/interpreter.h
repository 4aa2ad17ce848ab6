// The reference interpreter: the one definition of what programs and schedules compute.
// It evaluates kernel graphs literally: predefined ops directly, block graphs block by
// block (grid loop, for-loop over tiles, accumulators, epilogues, output placement), so a
// schedule's bugs show up here exactly as they would on a GPU. Templated on the number
// domain (see number_domain.h); float tests use double, fingerprints a finite field.
#pragma once

#include "graph/ir.h"
#include "verify/host_tensor.h"
#include "verify/number_domain.h"

namespace mugraph::verify {

// Evaluates `graph` (a program or a schedule's kernel graph) on `inputs` (by input name;
// shapes must match, else UserError) and returns its outputs by name.
// `meaning` says what max and the uninterpreted ops mean (number_domain.h; only the finite
// field has a choice).
template <class T>
TensorMap<T> evaluate(const graph::KernelGraph& graph, const TensorMap<T>& inputs,
                      const TrialMeaning& meaning = {});

// Where a causal_mask operand's last two dims sit in the whole tensor (graph/ops.h): the
// positions of its first row and column and the whole extents. The default stands for an
// operand that is the whole tensor.
struct MaskFrame {
  int64_t row = 0, col = 0;
  int64_t rows = 0, cols = 0;  // 0: the operand's own extents
};

// One op on host tensors, as both the kernel level and the block level define it
// (not input/output/block_graph/accumulators); `frame` places a causal_mask's operand.
template <class T>
HostTensor<T> applyOp(graph::OpKind kind, const graph::OpAttrs& attrs,
                      const std::vector<const HostTensor<T>*>& operands,
                      const TrialMeaning& meaning = {}, const MaskFrame& frame = {});

}  // namespace mugraph::verify
