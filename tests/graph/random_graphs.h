// Seeded generators of valid random programs and schedules, for round-trip, hash and (later)
// interpreter tests. Programs use every predefined op, ranks 1-4, broadcasting, transposed
// inputs and scale constants. A schedule lifts each program op into a block graph (grid
// splits, forloops with accumulators, fusion, epilogue outputs) or keeps it as a predefined
// kernel, so it computes the same function as its program.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "graph/builder.h"
#include "graph/shape_inference.h"
#include "graph/syntax.h"

namespace mugraph::testing {

class RandomGraphs {
 public:
  explicit RandomGraphs(uint64_t seed) : rng_(seed) {}
  // Ops drawn only from those up to `lastOp` in graph::OpKind's order: the op set of an older
  // generator, so a seed a regression test recorded gives the program it gave then.
  RandomGraphs(uint64_t seed, graph::OpKind lastOp) : rng_(seed), lastOp_(lastOp) {}

  graph::Program program();
  graph::Schedule scheduleFor(const graph::Program& program);
  graph::Schedule schedule() { return scheduleFor(program()); }

 private:
  struct PlanTensor {
    std::string name;  // empty: GraphBuilder picks t0, t1, ...
    graph::DType dtype;
    graph::Dims shape;
    graph::Layout layout = graph::Layout::RowMajor;
    bool isInput = false;
  };
  struct PlanOp {
    graph::OpKind kind;
    std::vector<int> operands;  // indices into plan_
    graph::OpAttrs attrs;
    int result = -1;
  };

  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  template <typename T>
  T pick(const std::vector<T>& items) {
    return items[uniform(0, static_cast<int>(items.size()) - 1)];
  }
  static std::vector<int64_t> divisorsAbove1(int64_t n) {
    std::vector<int64_t> result;
    for (int64_t d = 2; d <= n; ++d) {
      if (n % d == 0) result.push_back(d);
    }
    return result;
  }

  graph::Dims randomShape(int rank) {
    graph::Dims shape;
    for (int d = 0; d < rank; ++d) shape.push_back(pick<int64_t>({1, 2, 3, 4, 6, 8, 12, 16}));
    return shape;
  }
  int addInput(graph::Dims shape, graph::DType dtype) {
    PlanTensor t{"x" + std::to_string(inputs_++), dtype, std::move(shape)};
    t.isInput = true;
    if (t.shape.size() >= 2 && chance(0.3)) t.layout = graph::Layout::Transposed;
    if (t.shape.size() >= 3 && chance(0.2)) t.layout = graph::Layout::HeadsTransposed;
    plan_.push_back(std::move(t));
    return static_cast<int>(plan_.size()) - 1;
  }
  bool addOp(graph::OpKind kind);
  int operandFor(graph::OpKind kind, int first);
  void liftToBlockGraph(const graph::Program& program, const graph::KernelOp& op,
                        const graph::KernelOp* epilogue, graph::GraphBuilder& builder,
                        const std::string& kernelName);
  std::string tileName(const char* name) { return chance(0.5) ? "" : name; }

  std::mt19937_64 rng_;
  std::optional<graph::OpKind> lastOp_;  // none: every op
  std::vector<PlanTensor> plan_;
  std::vector<PlanOp> ops_;
  int inputs_ = 0;
};

// A second operand for a binary op or matmul with `first`: an existing tensor that fits, or a
// new input.
inline int RandomGraphs::operandFor(graph::OpKind kind, int first) {
  const PlanTensor a = plan_[first];
  const size_t rank = a.shape.size();
  graph::Dims want = a.shape;
  if (kind == graph::OpKind::Matmul) {
    want[rank - 2] = a.shape[rank - 1];
    want[rank - 1] = pick<int64_t>({1, 2, 4, 8, 16});
  } else {
    for (size_t d = 0; d < rank; ++d) {
      if (chance(0.25)) want[d] = 1;
      if (a.shape[d] == 1 && chance(0.3)) want[d] = pick<int64_t>({2, 4, 8});
    }
  }
  std::vector<int> fits;
  for (size_t i = 0; i < plan_.size(); ++i) {
    const PlanTensor& t = plan_[i];
    if (t.dtype != a.dtype || t.shape.size() != rank) continue;
    bool ok = true;
    for (size_t d = 0; d < rank; ++d) {
      if (kind == graph::OpKind::Matmul) {
        ok = ok && (d + 2 < rank ? t.shape[d] == a.shape[d] : true);
      } else {
        ok = ok && (t.shape[d] == a.shape[d] || t.shape[d] == 1 || a.shape[d] == 1);
      }
    }
    if (kind == graph::OpKind::Matmul) ok = ok && t.shape[rank - 2] == a.shape[rank - 1];
    if (ok) fits.push_back(static_cast<int>(i));
  }
  if (!fits.empty() && chance(0.5)) return pick(fits);
  return addInput(want, a.dtype);
}

inline bool RandomGraphs::addOp(graph::OpKind kind) {
  using graph::OpKind;
  const graph::OpInfo& info = graph::opInfo(kind);
  PlanOp op{kind, {}, {}, -1};
  int first = uniform(0, static_cast<int>(plan_.size()) - 1);
  if (kind == OpKind::Matmul && plan_[first].shape.size() < 2) {
    first = addInput(randomShape(uniform(2, 4)), plan_[first].dtype);
  }
  op.operands.push_back(first);
  if (info.arity == 2) {
    op.operands.push_back(operandFor(kind, first));
    if (kind != OpKind::Matmul && chance(0.5)) std::swap(op.operands[0], op.operands[1]);
  }
  const graph::Dims& shape = plan_[op.operands[0]].shape;
  if (info.hasDim) op.attrs.dim = uniform(0, static_cast<int>(shape.size()) - 1);
  if (graph::isRotation(kind)) {  // rotates halves or pairs: an even dim
    std::vector<int> even;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] % 2 == 0) even.push_back(static_cast<int>(d));
    }
    if (even.empty()) return false;
    op.attrs.dim = pick(even);
  }
  if (info.hasQueries) {  // rows of whole sequences of q queries, q at most the keys
    if (shape.size() < 2) return false;
    const int64_t rows = shape[shape.size() - 2], cols = shape.back();
    std::vector<int64_t> queries;
    if (rows <= cols) queries.push_back(0);
    for (int64_t q = 1; q <= std::min(rows, cols); ++q) {
      if (rows % q == 0) queries.push_back(q);
    }
    op.attrs.queries = pick(queries);
  }
  if (info.hasTo && chance(0.5)) {
    std::vector<int64_t> tos = divisorsAbove1(shape[op.attrs.dim]);
    if (!tos.empty()) op.attrs.to = pick(tos);
  }
  if (info.hasScale) {
    op.attrs.scale = chance(0.5) ? pick<double>({0.125, -2.5, 0.1, 1e-7, 3.0, 1.0 / 3.0, -0.0})
                                 : std::uniform_real_distribution<double>(-8, 8)(rng_);
  }
  std::vector<graph::Operand> operands;
  for (int i : op.operands) operands.push_back({plan_[i].name, plan_[i].dtype, plan_[i].shape});
  const graph::Inferred inferred = graph::inferOp(kind, op.attrs, operands);
  const std::string name = chance(0.5) ? "" : "v" + std::to_string(ops_.size());
  plan_.push_back(PlanTensor{name, inferred.dtype, inferred.shape});
  op.result = static_cast<int>(plan_.size()) - 1;
  ops_.push_back(std::move(op));
  return true;
}

inline graph::Program RandomGraphs::program() {
  plan_.clear();
  ops_.clear();
  inputs_ = 0;
  std::vector<graph::OpKind> kinds;
  for (const graph::OpInfo& info : graph::allOps()) {
    if (graph::isPredefinedOp(info.kind) && (!lastOp_ || info.kind <= *lastOp_))
      kinds.push_back(info.kind);
  }
  const int firstInputs = uniform(1, 3);
  for (int i = 0; i < firstInputs; ++i) {
    addInput(
        randomShape(uniform(1, 4)),
        pick(std::vector<graph::DType>{graph::DType::F16, graph::DType::BF16, graph::DType::F32}));
  }
  const int nOps = uniform(1, 7);
  for (int i = 0; i < nOps || ops_.empty(); ++i) addOp(pick(kinds));

  // Inputs first, then ops: the canonical tensor order every reader produces.
  graph::GraphBuilder builder(chance(0.7) ? "prog_" + std::to_string(uniform(0, 999)) : "");
  std::vector<graph::TensorId> ids(plan_.size(), -1);
  for (size_t i = 0; i < plan_.size(); ++i) {
    const PlanTensor& t = plan_[i];
    if (t.isInput) ids[i] = builder.input(t.name, t.dtype, t.shape, t.layout);
  }
  for (const PlanOp& op : ops_) {
    std::vector<graph::TensorId> operands;
    for (int i : op.operands) operands.push_back(ids[i]);
    ids[op.result] = builder.op(op.kind, operands, op.attrs, plan_[op.result].name);
  }
  std::vector<int> outputs{ops_.back().result};
  for (const PlanOp& op : ops_) {
    if (op.result != outputs[0] && chance(0.25)) outputs.push_back(op.result);
  }
  for (int i : outputs) {
    const bool heads = plan_[i].shape.size() >= 3 && chance(0.2);
    builder.output(ids[i], heads ? graph::Layout::HeadsTransposed : graph::Layout::RowMajor);
  }
  return builder.finish();
}

// One program op (plus an optional unary epilogue reading its result) as a block graph that
// computes the same values: output dims split over the grid, the contraction or reduced dim
// split over the forloop and combined by an accumulator.
inline void RandomGraphs::liftToBlockGraph(const graph::Program& program, const graph::KernelOp& op,
                                           const graph::KernelOp* epilogue,
                                           graph::GraphBuilder& builder,
                                           const std::string& kernelName) {
  using namespace graph;
  const Dims& out = program.tensors[op.outputs[0]].shape;
  const int rank = static_cast<int>(out.size());
  const OpClass opClass = opInfo(op.kind).opClass;
  std::vector<TensorId> kernelInputs;
  std::vector<TensorDesc> kernelInputDescs;
  std::vector<int> position;
  for (TensorId t : op.inputs) {
    const TensorId id = *builder.graph().findTensor(program.tensors[t].name);
    auto it = std::find(kernelInputs.begin(), kernelInputs.end(), id);
    position.push_back(static_cast<int>(it - kernelInputs.begin()));
    if (it == kernelInputs.end()) {
      kernelInputs.push_back(id);
      kernelInputDescs.push_back(builder.desc(id));
    }
  }
  // The dim of operand j that output dim d comes from, or -1 where the operand is replicated.
  auto operandDim = [&](size_t j, int d) {
    const Dims& shape = program.tensors[op.inputs[j]].shape;
    if (opClass == OpClass::Matmul && d >= rank - 2) {
      return (d == rank - 2) == (j == 0) ? d : kReplicated;
    }
    return opClass == OpClass::Matmul || opClass == OpClass::Reduction || shape[d] == out[d]
               ? d
               : kReplicated;
  };
  std::vector<int> splittable;
  for (int d = 0; d < rank; ++d) {
    if (out[d] > 1 && !(opClass == OpClass::Reduction && d == op.attrs.dim)) {
      splittable.push_back(d);
    }
  }
  std::array<int64_t, kGridAxes> grid{1, 1, 1};
  AxisMap omap{kReplicated, kReplicated, kReplicated};
  std::vector<int> axes{0, 1, 2};
  std::shuffle(axes.begin(), axes.end(), rng_);
  std::shuffle(splittable.begin(), splittable.end(), rng_);
  const int nSplit = uniform(0, std::min<int>(kGridAxes, static_cast<int>(splittable.size())));
  for (int i = 0; i < nSplit; ++i) {
    grid[axes[i]] = pick(divisorsAbove1(out[splittable[i]]));
    omap[axes[i]] = splittable[i];
  }
  int64_t forloop = 1;
  std::vector<int> fmap(op.inputs.size(), kReplicated);
  const Dims& first = program.tensors[op.inputs[0]].shape;
  if (op.kind == OpKind::Matmul && chance(0.6)) {
    std::vector<int64_t> options = divisorsAbove1(first[rank - 1]);
    if (!options.empty()) {
      forloop = pick(options);
      fmap = {rank - 1, rank - 2};
    }
  } else if ((op.kind == OpKind::ReduceSum || op.kind == OpKind::ReduceMax) && chance(0.6)) {
    std::vector<int64_t> options;
    for (int64_t f : divisorsAbove1(first[op.attrs.dim])) {
      if ((first[op.attrs.dim] / f) % op.attrs.to == 0) options.push_back(f);
    }
    if (!options.empty()) {
      forloop = pick(options);
      fmap = {op.attrs.dim};
    }
  }
  BlockGraphBuilder block(grid, pick<int>({32, 64, 128, 256, 512}), forloop, kernelInputDescs);
  std::vector<TensorId> tiles;
  std::vector<AxisMap> imaps;
  for (size_t j = 0; j < op.inputs.size(); ++j) {
    AxisMap imap{kReplicated, kReplicated, kReplicated};
    for (int a = 0; a < kGridAxes; ++a) {
      if (grid[a] > 1) imap[a] = operandDim(j, omap[a]);
    }
    imaps.push_back(imap);
    const bool sameAsFirst =
        j == 1 && position[1] == position[0] && fmap[0] == fmap[1] && imaps[0] == imaps[1];
    tiles.push_back(
        sameAsFirst ? tiles[0]
                    : block.input(position[j], imap, fmap[j], tileName(j == 0 ? "in_a" : "in_b")));
  }
  const TensorId core = block.op(op.kind, tiles, op.attrs, tileName("core"));
  TensorId result = core;
  if (forloop > 1 && op.kind == OpKind::ReduceSum && chance(0.4)) {
    // The same sum through the online-softmax accumulator: x_i = s_i·exp(−m_i) accumulated
    // with rescaling is Σ s_i·exp(−m_F), times exp(m_F) after the loop.
    OpAttrs maxAttrs = op.attrs;
    maxAttrs.to = 1;
    const TensorId tileMax = block.op(OpKind::ReduceMax, {tiles[0]}, maxAttrs, tileName("tmax"));
    const TensorId running = block.op(OpKind::AccumMax, {tileMax}, {}, tileName("m"));
    OpAttrs negate;
    negate.scale = -1.0;
    const TensorId down =
        block.op(OpKind::Exp, {block.op(OpKind::Scale, {running}, negate, tileName("neg"))}, {},
                 tileName("down"));
    const TensorId scaled = block.op(OpKind::Mul, {core, down}, {}, tileName("scaled"));
    const TensorId acc = block.op(OpKind::AccumRescaledSum, {scaled, running}, {}, tileName("acc"));
    const TensorId up = block.op(OpKind::Exp, {running}, {}, tileName("up"));
    result = block.op(OpKind::Mul, {acc, up}, {}, tileName("sum"));
  } else if (forloop > 1 || chance(0.2)) {
    const OpKind accum = op.kind == OpKind::ReduceMax ? OpKind::AccumMax : OpKind::AccumSum;
    result = block.op(accum, {core}, {}, tileName("acc"));
  }
  std::vector<std::pair<std::string, DType>> outputs{
      {program.tensors[op.outputs[0]].name, program.tensors[op.outputs[0]].dtype}};
  std::vector<TensorId> written{result};
  if (epilogue) {
    const TensorId e = block.op(epilogue->kind, {result}, epilogue->attrs, tileName("epi"));
    written.push_back(e);
    outputs.push_back(
        {program.tensors[epilogue->outputs[0]].name, program.tensors[epilogue->outputs[0]].dtype});
    if (chance(0.5)) {
      std::swap(written[0], written[1]);
      std::swap(outputs[0], outputs[1]);
    }
  }
  if (isElementwise(op.kind) && result == core && chance(0.6)) {
    std::vector<TensorId> fused{core};
    if (epilogue && chance(0.5)) fused.push_back(written[0] == core ? written[1] : written[0]);
    block.fuse(tiles[0], fused);
  } else if (epilogue && chance(0.6)) {
    block.fuse(result, {written[0] == result ? written[1] : written[0]});
  }
  for (TensorId t : written) block.output(t, omap);
  builder.blockGraph(kernelName, block.block(), kernelInputs, outputs);
}

inline graph::Schedule RandomGraphs::scheduleFor(const graph::Program& program) {
  using namespace graph;
  const std::string name = program.name.empty() ? "" : program.name + ".sched";
  GraphBuilder builder = GraphBuilder::withInputsOf(program, name);
  auto idOf = [&](TensorId t) { return *builder.graph().findTensor(program.tensors[t].name); };
  for (size_t k = 0; k < program.ops.size(); ++k) {
    const KernelOp& op = program.ops[k];
    if (chance(0.25)) {
      std::vector<TensorId> inputs;
      for (TensorId t : op.inputs) inputs.push_back(idOf(t));
      builder.op(op.kind, inputs, op.attrs, program.tensors[op.outputs[0]].name);
      continue;
    }
    const KernelOp* epilogue = nullptr;
    if (k + 1 < program.ops.size()) {
      const KernelOp& next = program.ops[k + 1];
      if (opInfo(next.kind).opClass == OpClass::Unary && next.inputs[0] == op.outputs[0] &&
          chance(0.7)) {
        epilogue = &next;
      }
    }
    liftToBlockGraph(program, op, epilogue, builder, "kernel_" + std::to_string(k));
    if (epilogue) ++k;
  }
  for (TensorId t : program.outputs) builder.output(idOf(t), program.tensors[t].layout);
  Schedule schedule;
  schedule.name = name;
  schedule.program = program;
  schedule.graph = builder.finish();
  return schedule;
}

}  // namespace mugraph::testing
