#include "search/enumerate_block_graphs.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "graph/builder.h"
#include "graph/shape_inference.h"
#include "graph/validate.h"

namespace mugraph::search {
namespace {

using graph::OpKind;

bool reduces(const FlowOp& op, int var) {
  return std::find(op.reducedVars.begin(), op.reducedVars.end(), var) != op.reducedVars.end();
}

std::set<int> segmentTensors(const Dataflow& flow, const Segment& segment) {
  std::set<int> tensors(segment.inputs.begin(), segment.inputs.end());
  for (int i = segment.first; i <= segment.last; ++i) tensors.insert(flow.ops[i].output);
  return tensors;
}

// A variable can be split if it is never buried inside a composite dim and never needed whole.
bool splittable(const Dataflow& flow, const std::set<int>& tensors, int var) {
  if (flow.vars[var].whole) return false;
  for (int t : tensors) {
    if (flow.buriedIn(t, var)) return false;
  }
  return true;
}

// Grid variables that every output carries (no replication) and no op reduces.
std::vector<int> parallelVars(const Dataflow& flow, const Segment& segment,
                              const std::set<int>& tensors) {
  std::vector<int> vars;
  for (int v = 0; v < static_cast<int>(flow.vars.size()); ++v) {
    bool everywhere = !segment.outputs.empty();
    for (int t : segment.outputs) everywhere = everywhere && flow.dimOf(t, v) >= 0;
    for (int i = segment.first; i <= segment.last; ++i)
      everywhere = everywhere && !reduces(flow.ops[i], v);
    if (everywhere && splittable(flow, tensors, v)) vars.push_back(v);
  }
  return vars;
}

// Variables that some op of the segment reduces over.
std::vector<int> reducedVars(const Dataflow& flow, const Segment& segment,
                             const std::set<int>& tensors) {
  std::set<int> vars;
  for (int i = segment.first; i <= segment.last; ++i) {
    for (int v : flow.ops[i].reducedVars) {
      if (splittable(flow, tensors, v)) vars.insert(v);
    }
  }
  return {vars.begin(), vars.end()};
}

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

// A reduction variable the grid may split: every output is a reduction over it, and nothing
// inside the segment reads such a partial result, except a partial max: values shifted by it
// may be summed, and those partial sums are combined by rescaling (FlashDecoding).
bool gridSplittableReduction(const Dataflow& flow, const Segment& segment, int var) {
  std::set<int> partial, partialMax, shifted;
  for (int i = segment.first; i <= segment.last; ++i) {
    const FlowOp& op = flow.ops[i];
    if (op.rescaledCombine) return false;
    bool readsShift = false;
    for (int t : op.inputs) {
      if (partialMax.count(t) || shifted.count(t)) {
        readsShift = true;
      } else if (partial.count(t)) {
        return false;
      }
    }
    if (reduces(op, var)) {
      (op.kind == OpKind::ReduceMax && !readsShift ? partialMax : partial).insert(op.output);
    } else if (readsShift) {
      if (!op.reducedVars.empty()) return false;  // reduced over another variable
      shifted.insert(op.output);
    }
  }
  for (int t : segment.outputs) {
    if (!partial.count(t) && !partialMax.count(t)) return false;
  }
  return true;
}

// The split variable a rescaling combine of the segment reduces, or -1.
int rescaledCombineVar(const Dataflow& flow, const Segment& segment) {
  for (int i = segment.first; i <= segment.last; ++i) {
    if (flow.ops[i].rescaledCombine) return flow.ops[i].reducedVars.at(0);
  }
  return -1;
}

// Smallest tile the search gives a variable: tensor-core granularity for matmul dims.
int64_t minimumTile(const IndexVar& var, const SearchConfig& config) {
  return var.matmulDim ? config.minMatmulTile : config.minPartialTile;
}

// Power-of-two counts that divide the extent, then, where a power-of-two tile does not divide
// it, ⌈extent / tile⌉ parts of that tile (the last one partial): tiles chosen for the
// hardware, not for the extent.
std::vector<GridSplit> gridCounts(int varId, const IndexVar& var, const SearchConfig& config) {
  std::vector<GridSplit> counts;
  for (int64_t c = 2; c <= var.extent && c <= config.maxGridPerDim; c *= 2) {
    if (var.extent % c != 0) break;
    if (var.matmulDim && var.extent / c < config.minMatmulTile) break;
    counts.push_back(GridSplit{varId, c, 0});
  }
  for (int64_t tile = minimumTile(var, config); 2 * tile <= var.extent; tile *= 2) {
    const int64_t count = (var.extent + tile - 1) / tile;
    if (var.extent % tile == 0 || count > config.maxGridPerDim) continue;
    counts.push_back(GridSplit{varId, count, tile});
  }
  return counts;
}

// Depth-first over variables in id order: skip the variable, or split it with each count.
void chooseGrids(const Dataflow& flow, const std::vector<int>& candidates,
                 const std::vector<int>& splitReductions, const SearchConfig& config, size_t next,
                 BlockChoice& current, std::vector<BlockChoice>& out) {
  if (next == candidates.size()) {
    out.push_back(current);
    return;
  }
  chooseGrids(flow, candidates, splitReductions, config, next + 1, current, out);
  if (current.grid.size() == static_cast<size_t>(graph::kGridAxes)) return;
  const int var = candidates[next];
  const bool isReduction =
      std::find(splitReductions.begin(), splitReductions.end(), var) != splitReductions.end();
  if (isReduction && current.reductionSplitVar >= 0) return;
  int64_t blocks = 1;
  for (const GridSplit& g : current.grid) blocks *= g.count;
  for (const GridSplit& split : gridCounts(var, flow.vars[var], config)) {
    if (blocks * split.count > config.maxGridBlocks) continue;
    current.grid.push_back(split);
    if (isReduction) current.reductionSplitVar = var;
    chooseGrids(flow, candidates, splitReductions, config, next + 1, current, out);
    if (isReduction) current.reductionSplitVar = -1;
    current.grid.pop_back();
  }
}

const GridSplit* gridSplitOf(const BlockChoice& choice, int var) {
  for (const GridSplit& g : choice.grid) {
    if (g.var == var) return &g;
  }
  return nullptr;
}

struct LoopChoice {
  int var = -1;
  int64_t trip = 1;
  int64_t tile = 0;  // > 0: declared (partial somewhere)
};

// For-loops over variable v: trips dividing the block's part, and, where the part is the
// whole extent or exactly divided, power-of-two tiles that do not divide it (the last
// iteration partial), as long as the parts stay the grid's.
std::vector<LoopChoice> loopChoices(int v, const IndexVar& var, const GridSplit* grid,
                                    const SearchConfig& config) {
  std::vector<LoopChoice> loops;
  const bool partialGrid = grid && grid->tile > 0;
  const int64_t parts = grid ? grid->count : 1;
  const int64_t perBlock = partialGrid ? grid->tile : var.extent / parts;
  const int64_t minTile = minimumTile(var, config);
  for (int64_t trip : config.forloopCandidates) {
    if (trip <= 1 || perBlock % trip != 0) continue;
    if (var.matmulDim && perBlock / trip < config.minMatmulTile) continue;
    loops.push_back({v, trip, partialGrid ? perBlock / trip : 0});
  }
  if (partialGrid) return loops;
  const int64_t maxTrip = config.forloopCandidates.empty() ? 1 : config.forloopCandidates.back();
  for (int64_t tile = minTile; 2 * tile <= perBlock; tile *= 2) {
    const int64_t trip = (perBlock + tile - 1) / tile;
    if (perBlock % tile == 0 || trip > maxTrip) continue;
    if ((var.extent + trip * tile - 1) / (trip * tile) != parts) continue;
    loops.push_back({v, trip, tile});
  }
  return loops;
}

// Element-wise ops join the register epilogue of the compute op (or fused op) they read, when
// every other operand is ready by then: exp(a − m) cannot run in the epilogue of the matmul
// making a when m is the row max of a, computed after it; it starts a chain of its own.
void fuseEpilogues(graph::BlockGraph& block) {
  const std::vector<graph::Phase> phase = graph::blockTensorPhases(block);
  std::vector<int> groupOf(block.tensors.size(), -1);
  std::vector<int> definedAt(block.tensors.size(), -1);
  std::vector<bool> computed(block.tensors.size(), false);
  for (size_t o = 0; o < block.ops.size(); ++o) {
    const graph::BlockOp& op = block.ops[o];
    if (op.output < 0) continue;
    definedAt[op.output] = static_cast<int>(o);
    if (op.kind != OpKind::Input) computed[op.output] = true;
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

Segment analyzeSegment(const Dataflow& flow, int first, int last) {
  Segment segment;
  segment.first = first;
  segment.last = last;
  std::set<int> produced;
  bool heavy = false;
  for (int i = first; i <= last; ++i) {
    const FlowOp& op = flow.ops[i];
    segment.fusable = segment.fusable && op.fusable;
    heavy = heavy || op.kind == OpKind::Matmul || !op.reducedVars.empty();
    for (int t : op.inputs) {
      if (!produced.count(t) &&
          std::find(segment.inputs.begin(), segment.inputs.end(), t) == segment.inputs.end()) {
        segment.inputs.push_back(t);
      }
    }
    produced.insert(op.output);
  }
  for (int i = first; i <= last; ++i) {
    const int t = flow.ops[i].output;
    bool readLater = flow.isProgramOutput(t);
    for (size_t j = last + 1; j < flow.ops.size() && !readLater; ++j) {
      const std::vector<int>& in = flow.ops[j].inputs;
      readLater = std::find(in.begin(), in.end(), t) != in.end();
    }
    if (readLater) segment.outputs.push_back(t);
  }
  segment.worthABlockGraph = heavy || last > first;
  return segment;
}

std::vector<BlockChoice> enumerateBlockChoices(const Dataflow& flow, const Segment& segment,
                                               const SearchConfig& config) {
  std::vector<BlockChoice> choices;
  if (!segment.fusable || !segment.worthABlockGraph || segment.outputs.empty()) return choices;
  const std::set<int> tensors = segmentTensors(flow, segment);
  std::vector<int> candidates = parallelVars(flow, segment, tensors);
  // A rescaling combine walks the partials in its for-loop, one partial per iteration.
  const int combineVar = rescaledCombineVar(flow, segment);
  const std::vector<int> reductions =
      combineVar >= 0 ? std::vector<int>{combineVar} : reducedVars(flow, segment, tensors);
  std::vector<int> splitReductions;
  if (config.allowGridSplitReduction && combineVar < 0) {
    for (int v : reductions) {
      if (gridSplittableReduction(flow, segment, v)) splitReductions.push_back(v);
    }
  }
  candidates.insert(candidates.end(), splitReductions.begin(), splitReductions.end());
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());

  std::vector<BlockChoice> grids;
  BlockChoice current;
  chooseGrids(flow, candidates, splitReductions, config, 0, current, grids);
  for (const BlockChoice& grid : grids) {
    int64_t blocks = 1;
    for (const GridSplit& g : grid.grid) blocks *= g.count;
    if (blocks < config.minGridBlocks) continue;
    std::vector<LoopChoice> loops = {{-1, 1, 0}};
    if (combineVar >= 0) loops = {{combineVar, flow.vars[combineVar].extent, 0}};
    for (int v : combineVar >= 0 ? std::vector<int>{} : reductions) {
      for (const LoopChoice& loop : loopChoices(v, flow.vars[v], gridSplitOf(grid, v), config)) {
        loops.push_back(loop);
      }
    }
    for (const LoopChoice& loop : loops) {
      for (int threads : config.threadCandidates) {
        BlockChoice choice = grid;
        choice.loopVar = loop.var;
        choice.forloop = loop.trip;
        choice.loopTile = loop.tile;
        choice.threads = threads;
        choices.push_back(std::move(choice));
      }
    }
  }
  return choices;
}

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
      if (choice.forloop > 1 && reduces(op, choice.loopVar)) {
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
      if (choice.forloop > 1 && state[t] == Phase::PerIteration) {
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
    fuseEpilogues(built.block);
    result.built = std::move(built);
  } catch (const graph::ShapeError&) {
    result.reason = PruneReason::Shape;
  }
  return result;
}

}  // namespace mugraph::search
