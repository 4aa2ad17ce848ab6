#include "graph/validate.h"

#include "graph/cuda_limits.h"

#include <algorithm>
#include <set>
#include <string_view>

#include "graph/dynamic_dims.h"
#include "graph/shape_inference.h"
#include "graph/tile_splits.h"

namespace mugraph::graph {
namespace {

[[noreturn]] void fail(const std::string& section, int index, int blockOp, const std::string& field,
                       const std::string& reason) {
  throw IrError(IrLocation{section, index, blockOp, field}, reason);
}

// The phase of a block op's result, from the phases of its operands: an input tile is
// per-iteration, or invariant where the loop does not walk it; an accumulator's result exists
// once per block after the loop, and any other op runs where its (phase-consistent) operands
// live. Validation and blockTensorPhases share it.
Phase resultPhase(const BlockOp& op, const std::vector<Phase>& phase) {
  if (op.kind == OpKind::AccumMax) return Phase::Running;
  if (isAccumulator(op.kind)) return Phase::PostLoop;
  if (op.kind == OpKind::Input) {
    return op.fmap == kReplicated ? Phase::Invariant : Phase::PerIteration;
  }
  if (op.inputs.empty()) return Phase::PerIteration;
  std::vector<Phase> operands;
  for (TensorId t : op.inputs) operands.push_back(phase[t]);
  return combinedPhase(operands).value_or(Phase::PerIteration);
}

// "'name'"; built by appending, since GCC 12's -Wrestrict misfires on "'" + std::string(...).
std::string quoted(std::string_view name) {
  std::string text = "'";
  text += name;
  text += "'";
  return text;
}

void checkTensorDescs(const KernelGraph& graph, const std::string& section) {
  std::set<std::string> names;
  for (size_t i = 0; i < graph.tensors.size(); ++i) {
    const TensorDesc& t = graph.tensors[i];
    const int index = static_cast<int>(i);
    if (t.name.empty()) fail(section, index, -1, "name", "tensor name is empty");
    if (!names.insert(t.name).second) {
      fail(section, index, -1, "name", "duplicate tensor '" + t.name + "'");
    }
    const int rank = static_cast<int>(t.shape.size());
    if (rank < 1 || rank > kMaxRank) {
      fail(section, index, -1, "shape",
           "tensor '" + t.name + "' has rank " + std::to_string(rank) + " (1 to 4 supported)");
    }
    for (int d = 0; d < rank; ++d) {
      if (t.shape[d] <= 0) {
        fail(section, index, -1, "shape[" + std::to_string(d) + "]",
             "tensor '" + t.name + "' dim " + std::to_string(d) + " is " +
                 std::to_string(t.shape[d]) + " (must be positive)");
      }
    }
    if (rank < swappedDimsFromEnd(t.layout).first) {
      fail(section, index, -1, "layout",
           "tensor '" + t.name + "' is " + std::string(layoutName(t.layout)) + " but has rank " +
               std::to_string(rank));
    }
  }
}

std::vector<Operand> operandsOf(const KernelGraph& graph, const std::vector<TensorId>& ids) {
  std::vector<Operand> operands;
  for (TensorId id : ids) {
    const TensorDesc& t = graph.tensors[id];
    operands.push_back(Operand{t.name, t.dtype, t.shape});
  }
  return operands;
}

void validateBlockGraph(const KernelGraph& graph, const KernelOp& kernel, const std::string& sec,
                        int k) {
  const BlockGraph& block = *kernel.block;
  for (int axis = 0; axis < kGridAxes; ++axis) {
    const std::string field = std::string("grid.") + gridAxisName(axis);
    if (block.grid[axis] < 1) {
      fail(sec, k, -1, field,
           field + " is " + std::to_string(block.grid[axis]) + " (must be >= 1)");
    }
    if (block.grid[axis] > maxGridExtent(axis)) {
      fail(sec, k, -1, field,
           field + " is " + std::to_string(block.grid[axis]) + " (CUDA allows at most " +
               std::to_string(maxGridExtent(axis)) + ")");
    }
  }
  for (int axis = 0; axis < kGridAxes; ++axis) {
    const std::string field = std::string("cluster.") + gridAxisName(axis);
    if (block.cluster[axis] < 1 || block.grid[axis] % block.cluster[axis] != 0) {
      fail(sec, k, -1, field,
           field + " is " + std::to_string(block.cluster[axis]) +
               " (must be >= 1 and divide grid." + gridAxisName(axis) + ", " +
               std::to_string(block.grid[axis]) + ")");
    }
  }
  if (block.threads < kWarpSize || block.threads > kMaxThreadsPerBlock ||
      block.threads % kWarpSize != 0) {
    fail(sec, k, -1, "threads",
         "threads is " + std::to_string(block.threads) + " (a multiple of " +
             std::to_string(kWarpSize) + " in " + std::to_string(kWarpSize) + ".." +
             std::to_string(kMaxThreadsPerBlock) + ")");
  }
  if (block.occupancy < 1 || int64_t{block.occupancy} * block.threads > kMaxThreadsPerSm) {
    fail(sec, k, -1, "occupancy",
         "occupancy is " + std::to_string(block.occupancy) + " (at least 1, and at most " +
             std::to_string(kMaxThreadsPerSm) +
             " threads on one multiprocessor: " + std::to_string(kMaxThreadsPerSm / block.threads) +
             " blocks of " + std::to_string(block.threads) + ")");
  }
  if (block.forloop < 1) {
    fail(sec, k, -1, "forloop", "forloop is " + std::to_string(block.forloop) + " (must be >= 1)");
  }
  const int nTensors = static_cast<int>(block.tensors.size());
  std::vector<bool> defined(nTensors, false);
  std::vector<Phase> phase(nTensors, Phase::PerIteration);
  std::vector<TileSplit> splits(nTensors);
  std::vector<int> written(kernel.outputs.size(), -1);
  std::set<std::string> names;
  for (size_t bi = 0; bi < block.ops.size(); ++bi) {
    const BlockOp& op = block.ops[bi];
    const int b = static_cast<int>(bi);
    const OpInfo& info = opInfo(op.kind);
    if (!info.blockLevel) {
      fail(sec, k, b, "op", quoted(info.name) + " is not a block-graph op");
    }
    for (size_t j = 0; j < op.inputs.size(); ++j) {
      const TensorId t = op.inputs[j];
      if (t < 0 || t >= nTensors || !defined[t]) {
        fail(sec, k, b, "inputs[" + std::to_string(j) + "]",
             "operand " + std::to_string(j) + " of " + std::string(info.name) +
                 " is used before it is defined (forward reference or cycle)");
      }
    }
    if (op.kind == OpKind::Output) {
      if (op.inputs.size() != 1) fail(sec, k, b, "inputs", "output takes exactly one tile");
      const BlockTensor& tile = block.tensors[op.inputs[0]];
      if (op.kernelTensor < 0 || op.kernelTensor >= static_cast<int>(kernel.outputs.size())) {
        fail(sec, k, b, "to", "output of '" + tile.name + "' names no output of this kernel");
      }
      if (written[op.kernelTensor] >= 0) {
        fail(sec, k, b, "to",
             "kernel output '" + graph.tensors[kernel.outputs[op.kernelTensor]].name +
                 "' is written twice");
      }
      written[op.kernelTensor] = b;
      if (block.forloop > 1 && (phase[op.inputs[0]] == Phase::PerIteration ||
                                phase[op.inputs[0]] == Phase::Invariant)) {
        fail(sec, k, b, "inputs",
             "output of '" + tile.name +
                 "' reads a per-iteration tile; with forloop > 1 outputs "
                 "must come after an accumulator");
      }
      const TensorDesc& dest = graph.tensors[kernel.outputs[op.kernelTensor]];
      Dims shape;
      try {
        shape = outputDeviceShape(tile.shape, tile.name, block, op, &splits[op.inputs[0]]);
      } catch (const ShapeError& e) {
        fail(sec, k, b, "omap", e.what());
      }
      if (shape != dest.shape) {
        fail(sec, k, b, "omap",
             "blocks write '" + tile.name + "' as " + formatDims(shape) + " but kernel output '" +
                 dest.name + "' is " + formatDims(dest.shape));
      }
      continue;
    }
    if (op.output < 0 || op.output >= nTensors) {
      fail(sec, k, b, "output", "op produces no tensor of this block graph");
    }
    const BlockTensor& out = block.tensors[op.output];
    if (defined[op.output]) fail(sec, k, b, "output", "tile '" + out.name + "' is defined twice");
    if (out.name.empty() || !names.insert(out.name).second) {
      fail(sec, k, b, "output", "tile name '" + out.name + "' is empty or duplicate");
    }
    Inferred inferred;
    if (op.kind == OpKind::Input) {
      if (op.kernelTensor < 0 || op.kernelTensor >= static_cast<int>(kernel.inputs.size())) {
        fail(sec, k, b, "from", "input '" + out.name + "' names no input of this kernel");
      }
      const TensorDesc& src = graph.tensors[kernel.inputs[op.kernelTensor]];
      try {
        inferred = {inputTileShape(src.shape, src.name, block, op), src.dtype};
        splits[op.output] = inputSplit(src.shape, src.name, block, op);
      } catch (const ShapeError& e) {
        fail(sec, k, b, "imap", e.what());
      }
    } else {
      std::vector<Operand> operands;
      for (TensorId t : op.inputs) {
        operands.push_back(
            Operand{block.tensors[t].name, block.tensors[t].dtype, block.tensors[t].shape});
      }
      try {
        inferred = inferOp(op.kind, op.attrs, operands);
        std::vector<const TileSplit*> operandSplits;
        std::vector<const Dims*> operandShapes;
        for (TensorId t : op.inputs) {
          operandSplits.push_back(&splits[t]);
          operandShapes.push_back(&block.tensors[t].shape);
        }
        splits[op.output] =
            resultSplit(op.kind, op.attrs, operandSplits, operandShapes, inferred.shape);
      } catch (const ShapeError& e) {
        fail(sec, k, b, "inputs", e.what());
      }
      if (isAccumulator(op.kind)) {
        if (phase[op.inputs[0]] != Phase::PerIteration &&
            phase[op.inputs[0]] != Phase::Invariant) {
          fail(sec, k, b, "inputs",
               std::string(info.name) + "(" + block.tensors[op.inputs[0]].name +
                   ") accumulates a tile that is already accumulated");
        }
        if (op.kind == OpKind::AccumRescaledSum) {
          const TensorId m = op.inputs[1];
          const bool runningMax =
              std::any_of(block.ops.begin(), block.ops.begin() + b, [&](const BlockOp& earlier) {
                return earlier.kind == OpKind::AccumMax && earlier.output == m;
              });
          if (!runningMax) {
            fail(sec, k, b, "inputs[1]",
                 "accum_rescaled_sum rescales by '" + block.tensors[m].name +
                     "', which is not an accum_max tile");
          }
        }
      } else {
        std::vector<Phase> operandPhases;
        for (TensorId t : op.inputs) operandPhases.push_back(phase[t]);
        if (!combinedPhase(operandPhases)) {
          TensorId perIteration = -1, accumulated = -1;
          for (TensorId t : op.inputs) {
            if (phase[t] == Phase::PerIteration && perIteration < 0) perIteration = t;
            if (phase[t] == Phase::PostLoop && accumulated < 0) accumulated = t;
          }
          fail(sec, k, b, "inputs",
               std::string(info.name) + " mixes per-iteration tile '" +
                   block.tensors[perIteration].name + "' with accumulated tile '" +
                   block.tensors[accumulated].name + "'");
        }
      }
    }
    phase[op.output] = resultPhase(op, phase);
    if (inferred.shape != out.shape || inferred.dtype != out.dtype) {
      fail(sec, k, b, "output",
           "tile '" + out.name + "' is declared " + std::string(dtypeName(out.dtype)) + " " +
               formatDims(out.shape) + " but computes " + std::string(dtypeName(inferred.dtype)) +
               " " + formatDims(inferred.shape));
    }
    defined[op.output] = true;
  }
  // A loop whose last part has fewer real iterations: every input it walks is cut alike, so
  // the blocks agree on how many iterations they run.
  if (const std::optional<DimSplit> shortened = shortenedLoop(splits)) {
    for (size_t bi = 0; bi < block.ops.size(); ++bi) {
      const BlockOp& op = block.ops[bi];
      if (op.kind != OpKind::Input || block.forloop == 1 || op.fmap == kReplicated) continue;
      const DimSplit& cut = splits[op.output].at(op.fmap);
      if (cut != *shortened) {
        fail(sec, k, static_cast<int>(bi), "fmap",
             "the last block part holds " +
                 std::to_string(shortened->iterationsIn(shortened->parts() - 1)) + " of the " +
                 std::to_string(block.forloop) +
                 " iterations, so every input the loop walks must be cut alike (" +
                 splitText(*shortened) + "), but '" + block.tensors[op.output].name + "' is " +
                 splitText(cut));
      }
    }
  }
  for (size_t o = 0; o < written.size(); ++o) {
    if (written[o] < 0) {
      fail(sec, k, -1, "outputs",
           "kernel output '" + graph.tensors[kernel.outputs[o]].name +
               "' is never written by the block graph");
    }
  }
  std::vector<bool> fusedAlready(nTensors, false);
  for (size_t g = 0; g < block.fusion.size(); ++g) {
    const FusionGroup& group = block.fusion[g];
    const std::string field = "fusion[" + std::to_string(g) + "]";
    if (group.producer < 0 || group.producer >= nTensors || !defined[group.producer]) {
      fail(sec, k, -1, field, "fusion producer is not a tile of this block graph");
    }
    std::set<TensorId> available{group.producer};
    for (TensorId t : group.fused) {
      if (t < 0 || t >= nTensors || !defined[t]) {
        fail(sec, k, -1, field, "fused tensor is not a tile of this block graph");
      }
      if (fusedAlready[t]) {
        fail(sec, k, -1, field, "tile '" + block.tensors[t].name + "' is fused twice");
      }
      fusedAlready[t] = true;
      const BlockOp* producerOp = nullptr;
      for (const BlockOp& op : block.ops) {
        if (op.output == t) producerOp = &op;
      }
      if (!producerOp || !isElementwise(producerOp->kind)) {
        fail(sec, k, -1, field,
             "tile '" + block.tensors[t].name + "' is not computed by an element-wise op");
      }
      bool chained = false;
      for (TensorId in : producerOp->inputs) chained = chained || available.count(in) > 0;
      if (!chained) {
        fail(sec, k, -1, field,
             "tile '" + block.tensors[t].name + "' does not read '" +
                 block.tensors[group.producer].name + "' or an earlier fused tile");
      }
      available.insert(t);
    }
  }
}

void validateGraph(const KernelGraph& graph, const std::string& prefix, bool allowBlockGraphs) {
  const std::string opsSection = prefix + (allowBlockGraphs ? "kernels" : "ops");
  checkTensorDescs(graph, prefix + "tensors");
  const int nTensors = static_cast<int>(graph.tensors.size());
  std::vector<bool> defined(nTensors, false);
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    const TensorId t = graph.inputs[i];
    if (t < 0 || t >= nTensors) fail(prefix + "inputs", static_cast<int>(i), -1, "", "bad input");
    if (defined[t]) {
      fail(prefix + "inputs", static_cast<int>(i), -1, "name",
           "duplicate input '" + graph.tensors[t].name + "'");
    }
    defined[t] = true;
  }
  for (size_t oi = 0; oi < graph.ops.size(); ++oi) {
    const KernelOp& op = graph.ops[oi];
    const int k = static_cast<int>(oi);
    const OpInfo& info = opInfo(op.kind);
    if (!info.kernelLevel || op.kind == OpKind::Input || op.kind == OpKind::Output ||
        (op.kind == OpKind::BlockGraph && !allowBlockGraphs)) {
      fail(opsSection, k, -1, "op",
           quoted(info.name) + " is not allowed here" +
               (allowBlockGraphs ? "" : " (programs hold predefined ops only)"));
    }
    for (size_t j = 0; j < op.inputs.size(); ++j) {
      const TensorId t = op.inputs[j];
      if (t < 0 || t >= nTensors || !defined[t]) {
        fail(opsSection, k, -1, "inputs[" + std::to_string(j) + "]",
             std::string(info.name) + " uses " +
                 (t >= 0 && t < nTensors ? "'" + graph.tensors[t].name + "'" : "a tensor") +
                 " before it is defined (forward reference or cycle)");
      }
    }
    if (op.outputs.empty()) fail(opsSection, k, -1, "outputs", "op produces no tensor");
    for (TensorId t : op.outputs) {
      if (t < 0 || t >= nTensors) fail(opsSection, k, -1, "outputs", "unknown output tensor");
      if (defined[t]) {
        fail(opsSection, k, -1, "outputs",
             "tensor '" + graph.tensors[t].name + "' is defined twice");
      }
    }
    if (op.kind == OpKind::BlockGraph) {
      if (!op.block) fail(opsSection, k, -1, "", "block_graph op has no block graph");
      validateBlockGraph(graph, op, opsSection, k);
    } else {
      if (op.block) fail(opsSection, k, -1, "", "predefined op carries a block graph");
      if (op.outputs.size() != 1) {
        fail(opsSection, k, -1, "outputs", "a predefined op produces exactly one tensor");
      }
      Inferred inferred;
      try {
        const std::vector<Operand> operands = operandsOf(graph, op.inputs);
        inferred = inferOp(op.kind, op.attrs, operands);
        checkWholeTensorAttrs(op.kind, op.attrs, operands.at(0));
      } catch (const ShapeError& e) {
        fail(opsSection, k, -1, "inputs", e.what());
      }
      const TensorDesc& out = graph.tensors[op.outputs[0]];
      if (inferred.shape != out.shape || inferred.dtype != out.dtype) {
        fail(opsSection, k, -1, "outputs",
             "tensor '" + out.name + "' is declared " + std::string(dtypeName(out.dtype)) + " " +
                 formatDims(out.shape) + " but " + std::string(info.name) + " computes " +
                 std::string(dtypeName(inferred.dtype)) + " " + formatDims(inferred.shape));
      }
    }
    for (TensorId t : op.outputs) defined[t] = true;
  }
  if (graph.outputs.empty()) fail(prefix + "outputs", -1, -1, "", "the graph has no output");
  std::set<TensorId> seen;
  for (size_t i = 0; i < graph.outputs.size(); ++i) {
    const TensorId t = graph.outputs[i];
    if (t < 0 || t >= nTensors || !defined[t]) {
      fail(prefix + "outputs", static_cast<int>(i), -1, "", "output names no defined tensor");
    }
    if (!seen.insert(t).second) {
      fail(prefix + "outputs", static_cast<int>(i), -1, "",
           "tensor '" + graph.tensors[t].name + "' is output twice");
    }
  }
  // A computed tensor is stored row-major, except an output stored heads_transposed: its rows
  // stay contiguous, so every store path writes it with other strides only.
  for (size_t oi = 0; oi < graph.ops.size(); ++oi) {
    for (TensorId t : graph.ops[oi].outputs) {
      const Layout layout = graph.tensors[t].layout;
      if (layout == Layout::RowMajor) continue;
      if (layout != Layout::HeadsTransposed || !seen.count(t)) {
        fail(opsSection, static_cast<int>(oi), -1, "outputs",
             "computed tensor '" + graph.tensors[t].name + "' must be row_major" +
                 (seen.count(t) ? " or heads_transposed"
                                : " (only an output may be stored heads_transposed)"));
      }
    }
  }
  validateDynamicDims(graph, prefix);
}

}  // namespace

void validateProgram(const Program& program, const std::string& sectionPrefix) {
  validateGraph(program, sectionPrefix, /*allowBlockGraphs=*/false);
}

void validateKernelGraph(const KernelGraph& graph, const std::string& sectionPrefix) {
  validateGraph(graph, sectionPrefix, /*allowBlockGraphs=*/true);
}

std::optional<Phase> combinedPhase(const std::vector<Phase>& operandPhases) {
  bool perIteration = false, postLoop = false, running = false, invariant = false;
  for (Phase p : operandPhases) {
    perIteration = perIteration || p == Phase::PerIteration;
    postLoop = postLoop || p == Phase::PostLoop;
    running = running || p == Phase::Running;
    invariant = invariant || p == Phase::Invariant;
  }
  if (perIteration && postLoop) return std::nullopt;
  if (postLoop) return Phase::PostLoop;
  // A running value with an invariant one changes every iteration like any per-iteration
  // value; Running is what the running maxima alone make.
  if (perIteration || (running && invariant)) return Phase::PerIteration;
  if (running) return Phase::Running;
  return invariant ? Phase::Invariant : Phase::PerIteration;
}

std::vector<Phase> blockTensorPhases(const BlockGraph& block) {
  std::vector<Phase> phase(block.tensors.size(), Phase::PerIteration);
  for (const BlockOp& op : block.ops) {
    if (op.output >= 0) phase[op.output] = resultPhase(op, phase);
  }
  return phase;
}

}  // namespace mugraph::graph
