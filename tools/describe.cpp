#include "tools/describe.h"

#include <sstream>

#include "graph/hash.h"
#include "graph/tile_splits.h"
#include "plan/kernel_plan.h"
#include "plan/lower_predefined_ops.h"
#include "search/cost_model.h"

namespace mugraph::tools {
namespace {

using namespace mugraph::graph;

std::string descText(const TensorDesc& t) {
  std::string text = t.name + " " + std::string(dtypeName(t.dtype)) + " " + formatDims(t.shape);
  if (t.layout != Layout::RowMajor) text += " " + std::string(layoutName(t.layout));
  return text;
}

std::string attrText(OpKind kind, const OpAttrs& attrs) {
  const OpInfo& info = opInfo(kind);
  std::ostringstream out;
  if (info.hasDim) out << ", dim=" << attrs.dim;
  if (info.hasTo && attrs.to != 1) out << ", to=" << attrs.to;
  if (info.hasScale) out << ", c=" << attrs.scale;
  if (info.hasQueries && attrs.queries > 0) out << ", queries=" << attrs.queries;
  return out.str();
}

std::string axisMapText(const AxisMap& map, const BlockGraph& block) {
  std::string text;
  for (int a = 0; a < kGridAxes; ++a) {
    if (block.grid[a] == 1) continue;
    text += std::string(text.empty() ? "" : " ") + gridAxisName(a) + ":" +
            (map[a] == kReplicated ? "rep" : std::to_string(map[a]));
  }
  return text.empty() ? "-" : text;
}

// What the plan for `target` decides about kernel `k` of `lowered` (a graph with every
// predefined op lowered): the numbers the emitter and the manifest use.
std::string planText(const KernelGraph& lowered, int k, const plan::Target& target) {
  const plan::KernelPlan kernel = plan::planKernel(lowered, k, target);
  const BlockGraph& block = *lowered.ops[k].block;
  std::ostringstream out;
  out << "grid (" << block.grid[0] << ", " << block.grid[1] << ", " << block.grid[2]
      << ") = " << block.blocks() << " blocks";
  if (block.clusterBlocks() > 1) {
    out << " in clusters of (" << block.cluster[0] << ", " << block.cluster[1] << ", "
        << block.cluster[2] << ")";
  }
  out << ", threads " << block.threads;
  if (block.occupancy > 1) out << ", " << block.occupancy << " blocks per multiprocessor";
  out << ", forloop " << block.forloop << ", shared memory " << kernel.sharedBytes << " B on "
      << target.name;
  if (kernel.pipelineStages > 1) out << ", " << kernel.pipelineStages << " pipeline stages";
  if (const plan::WarpgroupMmaPlan* gemm = kernel.as<plan::WarpgroupMmaPlan>()) {
    const plan::WarpgroupMmaPlan& wg = *gemm;
    out << ", wgmma (" << (wg.producer ? "a copy warpgroup, " : "") << wg.consumers
        << " multiplying)";
    if (wg.persistent) out << ", persistent on " << wg.launchGrid[0] << " blocks";
  }
  if (const plan::WarpgroupAttentionPlan* attention = kernel.as<plan::WarpgroupAttentionPlan>()) {
    out << ", wgmma attention (a copy warpgroup, " << attention->consumers << " multiplying)";
  }
  const std::string problem = plan::launchProblem(kernel, target);
  if (!problem.empty()) out << "  NOT LAUNCHABLE: " << problem;
  return out.str();
}

// The cost model's estimate of kernel `k` of `lowered`, term by term (search/cost_model.h).
std::string costText(const KernelGraph& lowered, int k, const plan::Target& target) {
  const search::KernelCostTerms terms = search::kernelCostTerms(lowered, k, target);
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(1);
  out << "estimated " << terms.total() << " us, bound by " << terms.bound() << " (memory "
      << terms.memory << ", compute " << terms.compute << ", loop " << terms.loop
      << ", block loads " << terms.blockLoads << ", launch " << terms.launch;
  if (terms.rows > 0) out << ", rows " << terms.rows;
  out << ")";
  return out.str();
}

// "  partial: dim 1 1030 in tiles of 128, the last 6" for the partial dims of an input tile.
std::string partialText(const TileSplit& split) {
  std::string text;
  for (size_t d = 0; d < split.size(); ++d) {
    if (!split[d].partial()) continue;
    text += (text.empty() ? "  partial: dim " : "; dim ") + std::to_string(d) + " " +
            splitText(split[d]);
  }
  return text;
}

void describeGraphOps(std::ostringstream& out, const KernelGraph& graph, const char* indent,
                      const KernelGraph* lowered, const plan::Target& target, bool estimate) {
  // `lowered` is `graph` with its predefined ops lowered, kernel for kernel. `estimate`: print
  // the cost model's estimate of each kernel (a graph of static shapes).
  for (size_t k = 0; k < graph.ops.size(); ++k) {
    const KernelOp& op = graph.ops[k];
    if (op.kind != OpKind::BlockGraph) {
      const TensorDesc& result = graph.tensors[op.outputs[0]];
      out << indent << "kernel " << k << ": " << result.name << " = " << opName(op.kind) << "(";
      for (size_t i = 0; i < op.inputs.size(); ++i) {
        out << (i ? ", " : "") << graph.tensors[op.inputs[i]].name;
      }
      out << attrText(op.kind, op.attrs) << ")  -> " << descText(result)
          << "  (predefined op, default schedule)\n";
      out << indent << "    default schedule: " << planText(*lowered, static_cast<int>(k), target)
          << "\n";
      if (estimate) {
        out << indent << "    " << costText(*lowered, static_cast<int>(k), target) << "\n";
      }
      continue;
    }
    const BlockGraph& block = *op.block;
    out << indent << "kernel " << k << ": " << op.name << "  "
        << planText(*lowered, static_cast<int>(k), target) << "\n";
    if (estimate) {
      out << indent << "    " << costText(*lowered, static_cast<int>(k), target) << "\n";
    }
    std::vector<Dims> inputShapes;
    for (TensorId t : op.inputs) inputShapes.push_back(graph.tensors[t].shape);
    const std::vector<TileSplit> splits = blockTileSplits(block, inputShapes);
    for (const BlockOp& bop : block.ops) {
      if (bop.kind == OpKind::Input) {
        const BlockTensor& tile = block.tensors[bop.output];
        out << indent << "    load   " << tile.name << " " << dtypeName(tile.dtype) << " "
            << formatDims(tile.shape) << " <- " << graph.tensors[op.inputs[bop.kernelTensor]].name
            << "  imap " << axisMapText(bop.imap, block) << "  fmap "
            << (bop.fmap == kReplicated ? "-" : std::to_string(bop.fmap))
            << partialText(splits[bop.output]) << "\n";
      } else if (bop.kind == OpKind::Output) {
        const TensorDesc& dest = graph.tensors[op.outputs[bop.kernelTensor]];
        out << indent << "    store  " << block.tensors[bop.inputs[0]].name << " -> "
            << descText(dest) << "  omap " << axisMapText(bop.omap, block) << "\n";
      } else {
        const BlockTensor& tile = block.tensors[bop.output];
        out << indent << "    " << (isAccumulator(bop.kind) ? "accum  " : "       ") << tile.name
            << " = " << opName(bop.kind) << "(";
        for (size_t i = 0; i < bop.inputs.size(); ++i) {
          out << (i ? ", " : "") << block.tensors[bop.inputs[i]].name;
        }
        out << attrText(bop.kind, bop.attrs) << ")  " << dtypeName(tile.dtype) << " "
            << formatDims(tile.shape) << "\n";
      }
    }
    for (const FusionGroup& group : block.fusion) {
      out << indent << "    fused into " << block.tensors[group.producer].name << ":";
      for (TensorId t : group.fused) out << " " << block.tensors[t].name;
      out << "\n";
    }
  }
}

void describeInterface(std::ostringstream& out, const KernelGraph& graph) {
  out << "  inputs:";
  for (TensorId t : graph.inputs) out << "  " << descText(graph.tensors[t]);
  out << "\n  outputs:";
  for (TensorId t : graph.outputs) out << "  " << descText(graph.tensors[t]);
  out << "\n";
}

std::string dotId(const std::string& prefix, const std::string& name) {
  return "\"" + prefix + name + "\"";
}

void graphToDot(std::ostringstream& out, const KernelGraph& graph) {
  for (TensorId t : graph.inputs) {
    out << "  " << dotId("", graph.tensors[t].name) << " [shape=box, label=\""
        << descText(graph.tensors[t]) << "\"];\n";
  }
  for (size_t k = 0; k < graph.ops.size(); ++k) {
    const KernelOp& op = graph.ops[k];
    const std::string opNode = "\"op" + std::to_string(k) + "\"";
    if (op.kind == OpKind::BlockGraph) {
      const BlockGraph& block = *op.block;
      out << "  subgraph cluster_" << k << " {\n    label=\"" << op.name << " grid ("
          << block.grid[0] << "," << block.grid[1] << "," << block.grid[2] << ") forloop "
          << block.forloop << "\";\n";
      const std::string prefix = "k" + std::to_string(k) + ".";
      for (const BlockOp& bop : block.ops) {
        if (bop.kind == OpKind::Output) continue;
        const BlockTensor& tile = block.tensors[bop.output];
        out << "    " << dotId(prefix, tile.name) << " [label=\"" << tile.name << " = "
            << opName(bop.kind) << "\\n"
            << formatDims(tile.shape) << "\"];\n";
        for (TensorId in : bop.inputs) {
          out << "    " << dotId(prefix, block.tensors[in].name) << " -> "
              << dotId(prefix, tile.name) << ";\n";
        }
      }
      out << "  }\n";
      for (const BlockOp& bop : block.ops) {
        if (bop.kind == OpKind::Input) {
          out << "  " << dotId("", graph.tensors[op.inputs[bop.kernelTensor]].name) << " -> "
              << dotId(prefix, block.tensors[bop.output].name) << ";\n";
        } else if (bop.kind == OpKind::Output) {
          const TensorDesc& dest = graph.tensors[op.outputs[bop.kernelTensor]];
          out << "  " << dotId("", dest.name) << " [shape=box, label=\"" << descText(dest)
              << "\"];\n  " << dotId(prefix, block.tensors[bop.inputs[0]].name) << " -> "
              << dotId("", dest.name) << ";\n";
        }
      }
      continue;
    }
    const TensorDesc& result = graph.tensors[op.outputs[0]];
    out << "  " << opNode << " [shape=ellipse, label=\"" << opName(op.kind)
        << attrText(op.kind, op.attrs) << "\"];\n";
    for (TensorId in : op.inputs) {
      out << "  " << dotId("", graph.tensors[in].name) << " -> " << opNode << ";\n";
    }
    out << "  " << dotId("", result.name) << " [shape=box, label=\"" << descText(result)
        << "\"];\n  " << opNode << " -> " << dotId("", result.name) << ";\n";
  }
}

}  // namespace

std::string describeProgram(const Program& program, const plan::Target& target) {
  std::ostringstream out;
  out << "program " << (program.name.empty() ? "(unnamed)" : program.name) << "  hash "
      << hashHex(programHash(program)) << "\n";
  describeInterface(out, program);
  const Schedule lowered = plan::lowerProgram(program, target);
  describeGraphOps(out, program, "  ", &lowered.graph, target, program.dims.empty());
  return out.str();
}

std::string describeSchedule(const Schedule& schedule, const plan::Target& target) {
  std::ostringstream out;
  out << "schedule " << (schedule.name.empty() ? "(unnamed)" : schedule.name) << "  hash "
      << hashHex(scheduleHash(schedule)) << "\n";
  out << "  implements program " << schedule.program.name << " (hash "
      << hashHex(programHash(schedule.program)) << ")\n";
  describeInterface(out, schedule.graph);
  int64_t workspace = 0;
  for (const KernelOp& op : schedule.graph.ops) {
    for (TensorId t : op.outputs) {
      bool isOutput = false;
      for (TensorId o : schedule.graph.outputs) isOutput = isOutput || o == t;
      const TensorDesc& d = schedule.graph.tensors[t];
      if (!isOutput) workspace += elementCount(d.shape) * dtypeBytes(d.dtype);
    }
  }
  out << "  kernels: " << schedule.graph.ops.size() << ", workspace " << workspace << " B";
  // A dynamic schedule's kernels are costed per length by superoptimize, not here.
  const bool estimate = schedule.program.dims.empty();
  if (estimate) {
    std::ostringstream total;
    total.setf(std::ios::fixed);
    total.precision(1);
    total << search::estimateCost(schedule.graph, target).microseconds;
    out << ", estimated " << total.str() << " us on " << target.name << " (cost model)";
  }
  out << "\n";
  const Schedule lowered = plan::lowerPredefinedOps(schedule, target);
  describeGraphOps(out, schedule.graph, "  ", &lowered.graph, target, estimate);
  return out.str();
}

std::string programToDot(const Program& program) {
  std::ostringstream out;
  out << "digraph program {\n  rankdir=TB;\n";
  graphToDot(out, program);
  out << "}\n";
  return out.str();
}

std::string scheduleToDot(const Schedule& schedule) {
  std::ostringstream out;
  out << "digraph schedule {\n  rankdir=TB;\n  compound=true;\n";
  graphToDot(out, schedule.graph);
  out << "}\n";
  return out.str();
}

}  // namespace mugraph::tools
