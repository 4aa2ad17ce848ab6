#include "search/enumerate_kernel_graphs.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <unordered_map>

#include "graph/error.h"
#include "graph/hash.h"
#include "graph/shape_inference.h"
#include "graph/validate.h"
#include "plan/kernel_plan.h"
#include "search/cost_model.h"
#include "search/dynamic_choices.h"
#include "search/range_cost.h"
#include "search/sketches.h"
#include "verify/abstract_expr.h"

namespace mugraph::search {
namespace {

std::string uniqueName(const graph::GraphBuilder& builder, const std::string& base) {
  for (int i = 0;; ++i) {
    std::string name = i == 0 ? base : base + std::to_string(i);
    if (!builder.graph().findTensor(name)) return name;
  }
}

// Whether a predefined op reading `inputs` reads a dynamic dim: its default block graph
// (plan/lower_predefined_ops.h) cuts by divisors of the reference length, not by declared
// tiles, so a dynamic program keeps such ops inside block graphs the search builds.
bool readsDynamicDim(const graph::KernelGraph& graph, const std::vector<graph::TensorId>& inputs) {
  return std::any_of(inputs.begin(), inputs.end(), [&](graph::TensorId t) {
    const std::vector<int>& dims = graph.tensors.at(t).dynamicDims;
    return std::any_of(dims.begin(), dims.end(), [](int d) { return d != graph::kStaticDim; });
  });
}

// Whether a kernel writing flow tensor `t` as `stored` keeps, between kernels, a value of
// squared range (graph/value_ranges.h) in 16 bits. A program output is stored as the program
// declares it.
bool storesSquaredRangeNarrow(const Dataflow& flow, int t, graph::DType stored) {
  return flow.tensors[t].squaredRange && !flow.isProgramOutput(t) && stored != graph::DType::F32;
}

// Adds the partial outputs' dataflow tensors and their combine ops (inserted right after the
// segment) for a block graph that split reduction variable `splitVar` `count` ways: a sum
// over the split, a max of the partial maxes, or, for sums of values a partial max shifted,
// the rescaling combine.
void addCombineOps(PartialSchedule& child, const Segment& segment,
                   const std::vector<BlockOutput>& outputs,
                   const std::vector<graph::TensorId>& kernelOutputs, int64_t count) {
  Dataflow& flow = child.flow;
  const int splitVar = static_cast<int>(flow.vars.size());
  flow.vars.push_back(IndexVar{count, false, false});
  std::map<int, int> partialOf;  // flow tensor -> its partial's flow tensor
  for (size_t o = 0; o < outputs.size(); ++o) {
    const int t = outputs[o].tensor;
    if (outputs[o].partialDim < 0) {
      child.kernelTensorOf[t] = kernelOutputs[o];
      continue;
    }
    FlowTensor partial;
    partial.desc = child.builder.desc(kernelOutputs[o]);
    partial.dims = flow.tensors[t].dims;
    partial.dims[outputs[o].partialDim].insert(partial.dims[outputs[o].partialDim].begin(),
                                               splitVar);
    partialOf[t] = static_cast<int>(flow.tensors.size());
    flow.tensors.push_back(std::move(partial));
    child.kernelTensorOf.push_back(kernelOutputs[o]);
  }
  std::vector<FlowOp> combines;
  for (const BlockOutput& output : outputs) {
    if (output.partialDim < 0 || !output.readLater) continue;
    const int t = output.tensor;
    const int d = output.partialDim;
    FlowOp combine;
    combine.attrs.dim = d;
    combine.inputs = {partialOf.at(t)};
    combine.output = t;
    combine.reducedVars = {splitVar};
    const bool isMax = std::any_of(
        flow.ops.begin() + segment.first, flow.ops.begin() + segment.last + 1,
        [&](const FlowOp& op) { return op.output == t && op.kind == graph::OpKind::ReduceMax; });
    if (isMax) {
      combine.kind = graph::OpKind::ReduceMax;
    } else {
      combine.kind = graph::OpKind::ReduceSum;
      combine.attrs.to = flow.tensors[t].desc.shape[d];
      if (output.rescaledBy >= 0) {
        combine.rescaledCombine = true;
        combine.inputs.push_back(partialOf.at(output.rescaledBy));
      }
    }
    combines.push_back(std::move(combine));
  }
  flow.ops.insert(flow.ops.begin() + segment.last + 1, combines.begin(), combines.end());
}

// What the search below a partial schedule depends on: the ops left (combine ops included),
// the variables, the labels and kernel tensors (shape, type, layout) of every dataflow tensor,
// and the counts the limits check. Two partial schedules with equal futures have equal
// subtrees up to their own kernels (names aside).
std::string futureOf(const PartialSchedule& state) {
  std::ostringstream key;
  const Dataflow& flow = state.flow;
  key << state.position << ' ' << state.kernels << ' ' << state.blockGraphKernels << ' '
      << state.gridSplits << " vars";
  for (const IndexVar& var : flow.vars) key << ' ' << var.extent;
  key << " ops";
  for (size_t o = static_cast<size_t>(state.position); o < flow.ops.size(); ++o) {
    const FlowOp& op = flow.ops[o];
    key << " (" << static_cast<int>(op.kind) << ' ' << op.output << ' ' << op.attrs.dim << ' '
        << op.attrs.to << ' ' << op.attrs.queries << ' ' << op.rescaledCombine;
    for (int t : op.inputs) key << ' ' << t;
    key << " r";
    for (int v : op.reducedVars) key << ' ' << v;
    key << ')';
  }
  key << " tensors";
  for (size_t t = 0; t < flow.tensors.size(); ++t) {
    key << " [";
    for (const DimLabel& dim : flow.tensors[t].dims) {
      for (int v : dim) key << v << ',';
      key << ';';
    }
    const graph::TensorId kernelTensor = state.kernelTensorOf[t];
    if (kernelTensor >= 0) {
      const graph::TensorDesc& desc = state.builder.graph().tensors.at(kernelTensor);
      key << static_cast<int>(desc.dtype) << ' ' << static_cast<int>(desc.layout);
      for (int64_t d : desc.shape) key << ' ' << d;
    }
    key << ']';
  }
  return key.str();
}

uint64_t nextEnumeratorId() {
  static std::atomic<uint64_t> next{1};
  return next++;
}

}  // namespace

KernelGraphEnumerator::KernelGraphEnumerator(const graph::Program& program,
                                             const SearchConfig& config,
                                             verify::SubexpressionOracle& oracle)
    : program_(program),
      rankingLengths_(rankingLengths(program)),
      config_(config),
      oracle_(oracle),
      id_(nextEnumeratorId()) {}

PartialSchedule KernelGraphEnumerator::start(const graph::Program& form) const {
  PartialSchedule state{buildDataflow(form),
                        graph::GraphBuilder::withInputsOf(program_, program_.name),
                        {},
                        {},
                        0,
                        0,
                        0,
                        0};
  state.kernelTensorOf.assign(state.flow.tensors.size(), -1);
  state.kernelTerms = verify::abstractExpressions(state.builder.graph());
  for (size_t i = 0; i < form.inputs.size(); ++i) {
    state.kernelTensorOf[form.inputs[i]] = state.builder.graph().inputs[i];
  }
  return state;
}

std::vector<Step> KernelGraphEnumerator::steps(const PartialSchedule& state,
                                               PruneCounts* pruned) const {
  std::vector<Step> steps;
  const int opCount = static_cast<int>(state.flow.ops.size());
  if (state.position >= opCount || state.kernels >= config_.maxKernels) return steps;
  const auto noRoom = [&] {
    if (pruned) ++(*pruned)[static_cast<int>(PruneReason::KernelLimit)];
  };
  // A rescaling combine has no predefined op: only a block graph runs it.
  const bool oneOpFits = roomToFinish(state, state.position + 1, state.blockGraphKernels);
  if (!oneOpFits) noRoom();
  if (!state.flow.ops[state.position].rescaledCombine && oneOpFits) {
    steps.push_back(Step{state.position, -1, {}});
  }
  // With no block graph left to fuse, a matmul still gets its tilings (lowerings of one op):
  // an element-wise op's default lowering already streams at bandwidth.
  const bool fusionLeft = state.blockGraphKernels < config_.maxBlockGraphKernels;
  if (!fusionLeft && state.flow.ops[state.position].kind != graph::OpKind::Matmul) return steps;
  const int lastGeneric =
      fusionLeft ? std::min(opCount, state.position + config_.maxBlockOps) - 1 : state.position;
  // A matmul's element-wise epilogue may run past maxBlockOps, offered to the sketches alone.
  const int lastAllowed = fusionLeft && config_.sketches
                              ? std::max(lastGeneric, lastGemmEpilogueOp(state.flow, state.position,
                                                                         config_.maxEpilogueOps))
                              : lastGeneric;
  // The longest segments first: a search its time limit stops has met the fused kernels,
  // which the one-op ones' deep subtrees would otherwise keep it from (a softmax's one-kernel
  // form, half the cost of its two-kernel ones, was not reached in 30 s).
  for (int last = lastAllowed; last >= state.position; --last) {
    // Combine ops a grid split inserts only add ops: a segment without room is pruned here.
    const bool fused = last > state.position;
    const bool room =
        fused ? roomToFinish(state, last + 1, state.blockGraphKernels + 1) : oneOpFits;
    if (!room) {
      if (fused) noRoom();  // the one-op segment was counted with the predefined step
      continue;
    }
    const Segment segment = analyzeSegment(state.flow, state.position, last);
    std::vector<BlockChoice> choices;
    if (last <= lastGeneric) choices = enumerateBlockChoices(state.flow, segment, config_);
    if (config_.sketches) {
      mergeSketchChoices(choices, sketchChoices(state.flow, segment, config_));
    }
    keepLengthIndependent(state.flow, segment, choices);
    for (size_t c = 0; c < choices.size(); ++c) {
      steps.push_back(Step{last, static_cast<int>(c), std::move(choices[c])});
    }
  }
  // The known-fast families first, so a search stopped by its time limit has met them.
  std::stable_partition(steps.begin(), steps.end(),
                        [](const Step& step) { return !step.block.sketch.empty(); });
  return steps;
}

// Terms are hash-consed, so a per-thread memo keyed by node identity answers repeats without
// the oracle's canonicalization and shared cache; it holds a reference so the node outlives it.
bool KernelGraphEnumerator::possibleSubexpression(const verify::AbstractExprRef& term) const {
  thread_local std::unordered_map<const void*, std::pair<uint64_t, bool>> memo;
  thread_local std::vector<verify::AbstractExprRef> keepAlive;
  const auto found = memo.find(term.get());
  if (found != memo.end() && found->second.first == id_) return found->second.second;
  const bool answer = oracle_.isPossibleSubexpression(term);
  memo[term.get()] = {id_, answer};
  keepAlive.push_back(term);
  return answer;
}

bool KernelGraphEnumerator::prunedByAbstractExpressions(const PartialSchedule& state,
                                                        const Segment& segment,
                                                        const graph::BlockGraph& block) const {
  std::vector<verify::AbstractExprRef> inputTerms;
  std::vector<graph::Dims> inputShapes;
  for (int t : segment.inputs) {
    inputTerms.push_back(state.kernelTerms.at(state.kernelTensorOf[t]));
    inputShapes.push_back(state.builder.graph().tensors.at(state.kernelTensorOf[t]).shape);
  }
  const std::vector<verify::AbstractExprRef> terms =
      verify::abstractExpressionsOfBlock(block, inputTerms, &inputShapes);
  for (const graph::BlockOp& op : block.ops) {
    if (op.kind == graph::OpKind::Input || op.output < 0) continue;
    if (!possibleSubexpression(terms.at(op.output))) return true;
  }
  return false;
}

bool KernelGraphEnumerator::apply(const PartialSchedule& state, const Step& step,
                                  PartialSchedule& child, ExploreStats& stats) const {
  auto prune = [&](PruneReason reason) {
    ++stats.pruned[static_cast<int>(reason)];
    return false;
  };
  const Segment segment = analyzeSegment(state.flow, state.position, step.last);
  child = state;
  child.position = step.last + 1;
  ++child.kernels;
  try {
    if (step.choice < 0) {
      const FlowOp& op = state.flow.ops[state.position];
      std::vector<graph::TensorId> inputs;
      for (int t : op.inputs) inputs.push_back(state.kernelTensorOf[t]);
      if (readsDynamicDim(child.builder.graph(), inputs)) {
        return prune(PruneReason::LengthDependent);
      }
      const graph::TensorDesc& desc = state.flow.tensors[op.output].desc;
      const graph::TensorId out =
          child.builder.op(op.kind, inputs, op.attrs, uniqueName(child.builder, desc.name));
      if (storesSquaredRangeNarrow(state.flow, op.output, child.builder.desc(out).dtype)) {
        return prune(PruneReason::SquaredRange);
      }
      child.kernelTensorOf[op.output] = out;
      child.kernelTerms = verify::abstractExpressions(child.builder.graph());
      if (!possibleSubexpression(child.kernelTerms.at(out))) {
        return prune(PruneReason::AbstractExpression);
      }
      ++stats.states;
      return true;
    }
    const BlockChoice& choice = step.block;
    BlockBuildResult result = buildBlockGraph(state.flow, segment, choice);
    if (!result.built) return prune(result.reason);
    // A sketch builds its block graph from the program's own structure; the oracle's count of
    // a ragged partial split (⌊n / (parts · iterations)⌋ per tile) refuses some of those, so
    // they are left to verification, which decides every candidate anyway.
    if (choice.sketch.empty() && prunedByAbstractExpressions(state, segment, result.built->block)) {
      return prune(PruneReason::AbstractExpression);
    }
    std::vector<graph::TensorId> inputs;
    for (int t : segment.inputs) inputs.push_back(state.kernelTensorOf[t]);
    std::vector<std::pair<std::string, graph::DType>> outputs;
    for (const BlockOutput& o : result.built->outputs) {
      const graph::TensorDesc& desc = state.flow.tensors[o.tensor].desc;
      if (o.partialDim >= 0) {
        outputs.push_back({uniqueName(child.builder, desc.name + "_part"), graph::DType::F32});
      } else if (storesSquaredRangeNarrow(state.flow, o.tensor, desc.dtype)) {
        return prune(PruneReason::SquaredRange);
      } else {
        outputs.push_back({uniqueName(child.builder, desc.name), desc.dtype});
      }
    }
    // A sketch's block graph carries its family and decisions as the kernel's name.
    const std::string plainName = "k" + std::to_string(state.kernels);
    const std::string name = choice.sketch.empty() ? plainName : plainName + "_" + choice.sketch;
    std::vector<graph::TensorId> kernelOutputs =
        child.builder.blockGraph(name, result.built->block, inputs, outputs);
    // The plan the code generator will print decides what fits: its bytes, not an estimate.
    const graph::KernelGraph& kernelGraph = child.builder.graph();
    const plan::KernelPlan planned = plan::planKernel(
        kernelGraph, static_cast<int>(kernelGraph.ops.size()) - 1, *config_.target);
    if (!plan::launchProblem(planned, *config_.target).empty()) {
      return prune(PruneReason::SharedMemory);
    }
    const std::vector<int>& warpgroupOnly = config_.warpgroupOnlyThreads;
    const bool onWarpgroupPath = planned.ring() != nullptr;
    const bool warpgroupOnlyThreads = std::find(warpgroupOnly.begin(), warpgroupOnly.end(),
                                                planned.block->threads) != warpgroupOnly.end();
    if (!onWarpgroupPath &&
        (warpgroupOnlyThreads || (!choice.generic && choice.sketchOnWarpgroupPath))) {
      return prune(PruneReason::SharedMemory);
    }
    if (!onWarpgroupPath && choice.sketchOnWarpgroupPath) {
      // A generic choice a warpgroup sketch named, planned off that path: not the sketch's.
      child.builder = state.builder;
      kernelOutputs = child.builder.blockGraph(plainName, result.built->block, inputs, outputs);
    }
    // A block graph of one op lowers that op; one of several fuses them (steps() keeps those
    // within the limit).
    if (segment.first != segment.last) ++child.blockGraphKernels;
    const GridSplit* split = nullptr;
    for (const GridSplit& g : choice.grid) {
      if (g.var == choice.reductionSplitVar) split = &g;
    }
    if (split) ++child.gridSplits;
    addCombineOps(child, segment, result.built->outputs, kernelOutputs, split ? split->count : 1);
    child.kernelTerms = verify::abstractExpressions(child.builder.graph());
  } catch (const graph::ShapeError&) {
    return prune(PruneReason::Shape);
  } catch (const UserError&) {
    // A kernel of a dynamic program that cannot take the lengths (plan/kernel_plan.h).
    if (state.builder.graph().dims.empty()) throw;
    return prune(PruneReason::LengthDependent);
  }
  ++stats.states;
  return true;
}

void KernelGraphEnumerator::finish(const PartialSchedule& state, SubtreeOutcome& outcome) const {
  graph::GraphBuilder builder = state.builder;
  // Stored as the program stores it (the dataflow's tensors are those of the form searched,
  // which stores its outputs as the program does).
  for (int t : state.flow.outputs) {
    builder.output(state.kernelTensorOf[t], state.flow.tensors[t].desc.layout);
  }
  Candidate candidate;
  try {
    candidate.schedule.program = program_;
    candidate.schedule.graph = builder.finish();
    graph::validateSchedule(candidate.schedule);
  } catch (const graph::IrError&) {
    ++outcome.stats.pruned[static_cast<int>(PruneReason::Shape)];
    return;
  }
  candidate.hash = graph::scheduleHash(candidate.schedule);
  candidate.origin = outcome.origin;
  candidate.gridSplits = state.gridSplits;
  if (!outcome.hashes.insert(candidate.hash).second) {
    ++outcome.stats.pruned[static_cast<int>(PruneReason::Duplicate)];
    return;
  }
  candidate.schedule.name = program_.name + ".v" + graph::hashHex(candidate.hash);
  candidate.schedule.graph.name = candidate.schedule.name;
  candidate.cost = poolCost(candidate.schedule, *config_.target, &candidate.lengthCosts);
  keepInPool(outcome.best, std::move(candidate), static_cast<size_t>(config_.candidatePool));
}

bool KernelGraphEnumerator::complete(const PartialSchedule& state) const {
  return state.position >= static_cast<int>(state.flow.ops.size());
}

// Whether the kernels left after a step to `position` can cover the ops left: fused block
// graphs of up to maxBlockOps ops while the limit allows, one op per other kernel.
bool KernelGraphEnumerator::roomToFinish(const PartialSchedule& state, int position,
                                         int blockGraphKernels) const {
  const int opsLeft = static_cast<int>(state.flow.ops.size()) - position;
  const int kernelsLeft = config_.maxKernels - state.kernels - 1;
  const int fusedLeft =
      std::clamp(config_.maxBlockGraphKernels - blockGraphKernels, 0, std::max(kernelsLeft, 0));
  return opsLeft == 0 || (kernelsLeft > 0 &&
                          fusedLeft * config_.maxBlockOps + (kernelsLeft - fusedLeft) >= opsLeft);
}

bool KernelGraphEnumerator::dominated(const Child& child, SubtreeOutcome& outcome) const {
  if (config_.childrenPerFuture <= 0) return false;
  std::vector<double>& best = outcome.explored[std::hash<std::string>{}(child.future)];
  const size_t keep = static_cast<size_t>(config_.childrenPerFuture);
  const double cost = child.state.microseconds;
  if (best.size() >= keep && best.back() <= cost) return true;
  best.insert(std::upper_bound(best.begin(), best.end(), cost), cost);
  if (best.size() > keep) best.pop_back();
  return false;
}

std::optional<Child> KernelGraphEnumerator::child(const PartialSchedule& state, const Step& step,
                                                  ExploreStats& stats) const {
  Child result;
  if (!apply(state, step, result.state, stats)) return std::nullopt;
  if (complete(result.state)) return result;
  const graph::KernelGraph& graph = result.state.builder.graph();
  const int kernel = static_cast<int>(graph.ops.size()) - 1;
  result.kernelMicroseconds = estimateKernelMicroseconds(graph, kernel, *config_.target);
  result.state.microseconds += result.kernelMicroseconds;
  if (!rankingLengths_.empty() && !step.block.sketch.empty()) {
    result.rangeMicroseconds = kernelCostOverRange(graph, kernel, rankingLengths_, *config_.target);
  }
  result.future = futureOf(result.state);
  return result;
}

std::vector<bool> undominated(const std::vector<std::optional<Child>>& children, int perFuture) {
  std::map<std::string, std::vector<size_t>> byFuture;
  for (size_t i = 0; i < children.size(); ++i) {
    if (children[i]) byFuture[children[i]->future].push_back(i);
  }
  std::vector<bool> keep(children.size(), false);
  for (auto& [future, members] : byFuture) {
    std::stable_sort(members.begin(), members.end(), [&](size_t a, size_t b) {
      return children[a]->kernelMicroseconds < children[b]->kernelMicroseconds;
    });
    for (size_t m = 0; m < members.size(); ++m) {
      // A complete schedule has no future to share: it is a candidate of its own.
      keep[members[m]] = perFuture <= 0 || future.empty() || m < static_cast<size_t>(perFuture);
    }
    // The members costed over the range: the cheapest few at each length too.
    std::vector<size_t> ranged;
    for (size_t i : members) {
      if (!children[i]->rangeMicroseconds.empty()) ranged.push_back(i);
    }
    if (perFuture <= 0 || ranged.size() <= static_cast<size_t>(perFuture)) {
      for (size_t i : ranged) keep[i] = true;
      continue;
    }
    const size_t lengths = children[ranged.front()]->rangeMicroseconds.size();
    for (size_t l = 0; l < lengths; ++l) {
      std::stable_sort(ranged.begin(), ranged.end(), [&](size_t a, size_t b) {
        return children[a]->rangeMicroseconds.at(l) < children[b]->rangeMicroseconds.at(l);
      });
      for (size_t m = 0; m < static_cast<size_t>(perFuture); ++m) keep[ranged[m]] = true;
    }
  }
  return keep;
}

void KernelGraphEnumerator::explore(const PartialSchedule& state, SubtreeOutcome& outcome,
                                    const std::atomic<bool>& stop) const {
  const auto stopped = [&] {
    if (!stop.load(std::memory_order_relaxed)) return false;
    outcome.completed = false;
    return true;
  };
  if (stopped()) return;
  if (complete(state)) {
    finish(state, outcome);
    return;
  }
  if (state.kernels >= config_.maxKernels) {
    ++outcome.stats.pruned[static_cast<int>(PruneReason::KernelLimit)];
    return;
  }
  std::vector<std::optional<Child>> children;
  for (const Step& step : steps(state, &outcome.stats.pruned)) {
    if (stopped()) return;
    children.push_back(child(state, step, outcome.stats));
  }
  const std::vector<bool> keep = undominated(children, config_.childrenPerFuture);
  for (size_t i = 0; i < children.size(); ++i) {
    if (!children[i]) continue;
    // A child kept for its cost at some length is not judged again at the reference length.
    const bool byRange = !children[i]->rangeMicroseconds.empty();
    if (!keep[i] ||
        (!byRange && !children[i]->future.empty() && dominated(*children[i], outcome))) {
      ++outcome.stats.pruned[static_cast<int>(PruneReason::Dominated)];
      continue;
    }
    if (stopped()) return;
    explore(children[i]->state, outcome, stop);
  }
}

}  // namespace mugraph::search
