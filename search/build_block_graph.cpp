#include "search/build_block_graph.h"

#include <algorithm>
#include <map>
#include <optional>

#include "graph/builder.h"
#include "graph/shape_inference.h"
#include "graph/validate.h"

namespace mugraph::search {
namespace {

using graph::OpKind;

// Which values of a segment were shifted by a max (exp(x − m) reads x − m): for each flow
// tensor, the max it was shifted by, or -1. Reductions stop the shift: their results are
// the sums the shift rescales (see rescaledBy).
struct Shifts {
  std::vector<int> shiftedBy;   // per flow tensor
  std::vector<int> rescaledBy;  // per flow tensor: a reduction of values shifted by this max
};

Shifts segmentShifts(const Dataflow& flow, const Segment& segment) {
  Shifts shifts{std::vector<int>(flow.tensors.size(), -1),
                std::vector<int>(flow.tensors.size(), -1)};
  std::vector<bool> isMax(flow.tensors.size(), false);
  for (int i = segment.first; i <= segment.last; ++i) {
    const FlowOp& op = flow.ops[i];
    int by = -1;
    for (int t : op.inputs) {
      if (by < 0) by = isMax[t] ? t : shifts.shiftedBy[t];
    }
    if (op.kind == OpKind::ReduceMax) {
      isMax[op.output] = true;
    } else if (!op.reducedVars.empty()) {
      shifts.rescaledBy[op.output] = by;
    } else {
      shifts.shiftedBy[op.output] = by;
    }
  }
  return shifts;
}

// Element-wise ops join the register epilogue of the compute op (or fused op) they read, when
// every other operand is ready by then: exp(a − m) cannot run in the epilogue of the matmul
// making a when m is the row max of a, computed after it; it starts a chain of its own.
// Loaded tiles and accumulators have no element loop to host an epilogue (the plan runs ops
// after them as ordinary ops), so they start no chain: the record says what the plan does.
void fuseEpilogues(graph::BlockGraph& block) {
  const std::vector<graph::Phase> phase = graph::blockTensorPhases(block);
  std::vector<int> groupOf(block.tensors.size(), -1);
  std::vector<int> definedAt(block.tensors.size(), -1);
  std::vector<bool> computed(block.tensors.size(), false);
  for (size_t o = 0; o < block.ops.size(); ++o) {
    const graph::BlockOp& op = block.ops[o];
    if (op.output < 0) continue;
    definedAt[op.output] = static_cast<int>(o);
    computed[op.output] = op.kind != OpKind::Input && !graph::isAccumulator(op.kind);
    if (!graph::isElementwise(op.kind)) continue;
    for (graph::TensorId in : op.inputs) {
      if (!computed[in] || phase[in] != phase[op.output]) continue;
      const graph::TensorId producer = groupOf[in] < 0 ? in : block.fusion[groupOf[in]].producer;
      const bool ready = std::all_of(op.inputs.begin(), op.inputs.end(), [&](graph::TensorId x) {
        return x == in || definedAt[x] <= definedAt[producer];
      });
      if (!ready) continue;
      if (groupOf[in] < 0) {
        groupOf[in] = static_cast<int>(block.fusion.size());
        block.fusion.push_back(graph::FusionGroup{in, {}});
      }
      groupOf[op.output] = groupOf[in];
      block.fusion[groupOf[in]].fused.push_back(op.output);
      break;
    }
  }
}

// The tile input `t` declares when a split of the choice does not divide (empty otherwise):
// the tile of each dim under the choice's grid and loop cuts.
graph::Dims declaredTile(const Dataflow& flow, int t, const BlockChoice& choice) {
  bool partial = choice.loopTile > 0;
  for (const GridSplit& g : choice.grid) partial = partial || g.tile > 0;
  if (!partial) return {};
  graph::Dims tile = flow.tensors[t].desc.shape;
  bool cut = false;
  for (const GridSplit& g : choice.grid) {
    const int dim = flow.dimOf(t, g.var);
    if (dim < 0) continue;
    tile[dim] = g.tile > 0 ? g.tile : tile[dim] / g.count;
    cut = cut || g.tile > 0;
  }
  if (choice.loopVar >= 0) {
    const int dim = flow.dimOf(t, choice.loopVar);
    if (dim >= 0) {
      tile[dim] = choice.loopTile > 0 ? choice.loopTile : tile[dim] / choice.forloop;
      cut = cut || choice.loopTile > 0 || gridSplitOf(choice, choice.loopVar) != nullptr;
    }
  }
  return cut ? tile : graph::Dims{};
}

}  // namespace

BlockBuildResult buildBlockGraph(const Dataflow& flow, const Segment& segment,
                                 const BlockChoice& choice) {
  BlockBuildResult result;
  std::array<int64_t, graph::kGridAxes> grid{1, 1, 1};
  for (size_t a = 0; a < choice.grid.size(); ++a) grid[a] = choice.grid[a].count;
  std::vector<graph::TensorDesc> inputDescs;
  for (int t : segment.inputs) inputDescs.push_back(flow.tensors[t].desc);
  graph::BlockGraphBuilder builder(grid, choice.threads, choice.forloop, inputDescs);

  using graph::Phase;
  std::vector<graph::TensorId> tile(flow.tensors.size(), -1);
  std::vector<Phase> state(flow.tensors.size(), Phase::PerIteration);
  const Shifts shifts = segmentShifts(flow, segment);
  // Rescaling combine: per partial max tile, the running max m and the factor exp(m_j − m).
  std::map<graph::TensorId, std::pair<graph::TensorId, graph::TensorId>> rescaleOf;
  try {
    for (size_t i = 0; i < segment.inputs.size(); ++i) {
      const int t = segment.inputs[i];
      graph::AxisMap imap{graph::kReplicated, graph::kReplicated, graph::kReplicated};
      for (size_t a = 0; a < choice.grid.size(); ++a) imap[a] = flow.dimOf(t, choice.grid[a].var);
      const int fmap = choice.loopVar >= 0 ? flow.dimOf(t, choice.loopVar) : graph::kReplicated;
      tile[t] = builder.input(static_cast<int>(i), imap, fmap, "", declaredTile(flow, t, choice));
      // A tile the loop does not walk is the same in every iteration and after the loop.
      if (fmap == graph::kReplicated) state[t] = Phase::Invariant;
    }
    for (int i = segment.first; i <= segment.last; ++i) {
      const FlowOp& op = flow.ops[i];
      std::vector<graph::TensorId> operands;
      std::vector<Phase> phases;
      for (int t : op.inputs) {
        operands.push_back(tile[t]);
        phases.push_back(state[t]);
      }
      const std::optional<Phase> phase = graph::combinedPhase(phases);
      if (!phase) {
        result.reason = PruneReason::LoopPhase;
        return result;
      }
      if (op.rescaledCombine) {
        // acc = Σ_j x_j·exp(m_j − m), m the running max of the partial maxes m_j.
        const graph::TensorId partial = operands[0], partialMax = operands[1];
        auto [at, fresh] = rescaleOf.try_emplace(partialMax, -1, -1);
        if (fresh) {
          const graph::TensorId running = builder.op(OpKind::AccumMax, {partialMax});
          at->second = {running,
                        builder.op(OpKind::Exp, {builder.op(OpKind::Sub, {partialMax, running})})};
        }
        const auto [m, factor] = at->second;
        tile[op.output] =
            builder.op(OpKind::AccumRescaledSum, {builder.op(OpKind::Mul, {partial, factor}), m});
        state[op.output] = Phase::PostLoop;
        continue;
      }
      const bool identity = op.kind == OpKind::ReduceSum && op.attrs.to > 1 &&
                            builder.tile(operands[0]).shape.at(op.attrs.dim) == op.attrs.to;
      graph::TensorId out = identity ? operands[0] : builder.op(op.kind, operands, op.attrs);
      Phase outState = *phase;
      if (choice.loops() && reduces(op, choice.loopVar)) {
        const int by = shifts.rescaledBy[op.output];
        if (op.kind == OpKind::ReduceMax) {
          out = builder.op(OpKind::AccumMax, {out});
          outState = Phase::Running;
        } else if (by >= 0 && state[by] == Phase::Running) {
          out = builder.op(OpKind::AccumRescaledSum, {out, tile[by]});
          outState = Phase::PostLoop;
        } else {
          out = builder.op(OpKind::AccumSum, {out});
          outState = Phase::PostLoop;
        }
      }
      tile[op.output] = out;
      state[op.output] = outState;
    }
    // A split of the softmax's reduction writes each rescaled sum's partial max as well.
    std::vector<std::pair<int, bool>> written;  // flow tensor, read later
    for (int t : segment.outputs) written.push_back({t, true});
    // Whether max `by` is a partial max of the grid split (else its shift needs no rescale).
    const auto partialMax = [&](int by) {
      for (int i = segment.first; i <= segment.last && by >= 0; ++i) {
        if (flow.ops[i].output == by) return reduces(flow.ops[i], choice.reductionSplitVar);
      }
      return false;
    };
    if (choice.reductionSplitVar >= 0) {
      for (int t : segment.outputs) {
        const int by = shifts.rescaledBy[t];
        if (!partialMax(by)) continue;
        if (std::none_of(written.begin(), written.end(),
                         [&](const auto& w) { return w.first == by; })) {
          written.push_back({by, false});
        }
      }
    }
    BuiltBlockGraph built;
    for (const auto& [t, readLater] : written) {
      if (choice.loops() && (state[t] == Phase::PerIteration || state[t] == Phase::Invariant)) {
        result.reason = PruneReason::LoopPhase;
        return result;
      }
      graph::AxisMap omap{graph::kReplicated, graph::kReplicated, graph::kReplicated};
      std::vector<bool> used(flow.tensors[t].dims.size(), false);
      for (size_t a = 0; a < choice.grid.size(); ++a) {
        if (choice.grid[a].var == choice.reductionSplitVar) continue;
        omap[a] = flow.dimOf(t, choice.grid[a].var);
        if (omap[a] < 0) {
          result.reason = PruneReason::Replication;
          return result;
        }
        used[omap[a]] = true;
      }
      BlockOutput output{t, -1, -1, readLater};
      if (partialMax(shifts.rescaledBy[t])) output.rescaledBy = shifts.rescaledBy[t];
      for (size_t a = 0; a < choice.grid.size(); ++a) {
        if (choice.grid[a].var != choice.reductionSplitVar) continue;
        for (int d = static_cast<int>(used.size()) - 1; d >= 0 && output.partialDim < 0; --d) {
          if (!used[d]) output.partialDim = d;
        }
        if (output.partialDim < 0) {
          result.reason = PruneReason::Replication;
          return result;
        }
        omap[a] = output.partialDim;
      }
      builder.output(tile[t], omap);
      built.outputs.push_back(output);
    }
    built.block = builder.block();
    built.block.cluster = choice.cluster;
    built.block.occupancy = choice.occupancy;
    fuseEpilogues(built.block);
    result.built = std::move(built);
  } catch (const graph::ShapeError&) {
    result.reason = PruneReason::Shape;
  }
  return result;
}

}  // namespace mugraph::search
