#include "verify/false_accept_bound.h"

#include <cmath>
#include <random>

#include "graph/error.h"
#include "verify/degree_domain.h"
#include "verify/evaluation_plan.h"
#include "verify/interpreter.h"
#include "verify/reference_cache.h"

namespace mugraph::verify {
namespace {

bool graphUsesExp(const graph::KernelGraph& g) {
  for (const graph::KernelOp& op : g.ops) {
    if (op.kind == graph::OpKind::Exp) return true;
    if (!op.block) continue;
    for (const graph::BlockOp& bop : op.block->ops) {
      if (bop.kind == graph::OpKind::Exp) return true;
    }
  }
  return false;
}

// How many random-function values one op computes on operands of these shapes: one per
// element for an uninterpreted op, one sqrt per normalized row for rms_norm, one per element
// for exp (or accum_rescaled_sum's factor) when `countExp`.
int64_t randomFunctionValues(graph::OpKind kind, const graph::OpAttrs& attrs,
                             const graph::Dims& operand, bool countExp) {
  const int64_t elements = graph::elementCount(operand);
  if (graph::opInfo(kind).uninterpreted) return elements;
  if (kind == graph::OpKind::RmsNorm) return elements / operand.at(attrs.dim);
  const bool exp = kind == graph::OpKind::Exp || kind == graph::OpKind::AccumRescaledSum;
  return exp && countExp ? elements : 0;
}

// Random-function applications of one evaluation of `g`: every kernel op once, every block
// op once per block and, before the accumulators, once per iteration.
int64_t randomFunctionApplications(const graph::KernelGraph& g, bool countExp) {
  const KernelPlan plan = planKernelGraph(g);
  int64_t total = 0;
  for (const KernelStep& step : plan.steps) {
    const graph::KernelOp& op = *step.op;
    if (op.kind != graph::OpKind::BlockGraph) {
      total += randomFunctionValues(op.kind, op.attrs, g.tensors[op.inputs.at(0)].shape, countExp);
      continue;
    }
    const BlockPlan& block = step.block;
    const int64_t blocks = block.grid[0] * block.grid[1] * block.grid[2];
    const auto count = [&](const std::vector<BlockStep>& steps, int64_t times) {
      for (const BlockStep& s : steps) {
        if (s.inputs.empty()) continue;
        const graph::Dims& operand = block.tileShapes.at(s.inputs[0]);
        total += times * randomFunctionValues(s.kind, s.attrs, operand, countExp);
      }
    };
    count(block.perIteration, blocks * block.forloop);
    count(block.postLoop, blocks);
  }
  return total;
}

TensorMap<DegreeValue> degreeInputs(const graph::KernelGraph& g, uint64_t seed) {
  std::mt19937_64 generator(seed);
  TensorMap<DegreeValue> inputs;
  for (graph::TensorId id : g.inputs) {
    const graph::TensorDesc& desc = g.tensors[id];
    HostTensor<DegreeValue> tensor{desc.shape, {}};
    tensor.data.resize(static_cast<size_t>(graph::elementCount(desc.shape)));
    for (DegreeValue& v : tensor.data) v = DegreeValue{1, 0, generator() | 1, 1};
    inputs[desc.name] = std::move(tensor);
  }
  return inputs;
}

}  // namespace

DegreeReport differenceDegree(const graph::KernelGraph& a, const graph::KernelGraph& b,
                              uint64_t seed, ReferenceEvaluations* cache) {
  const TensorMap<DegreeValue> inputs = degreeInputs(a, seed);
  const TensorMap<DegreeValue> outA =
      cache ? cache->degreeOutputs(inputs, seed) : evaluate(a, inputs);
  const TensorMap<DegreeValue> outB = evaluate(b, inputs);
  DegreeReport report;
  report.usesExp = graphUsesExp(a) || graphUsesExp(b);
  for (const auto& [name, ta] : outA) {
    const auto found = outB.find(name);
    if (found == outB.end() || found->second.data.size() != ta.data.size()) {
      throw UserError("output '" + name + "'", "is missing or has another shape");
    }
    const auto& tb = found->second;
    for (size_t i = 0; i < ta.data.size(); ++i) {
      const DegreeValue& x = ta.data[i];
      const DegreeValue& y = tb.data[i];
      // N_x/D_x − N_y/D_y has numerator N_x·D_y − N_y·D_x, or N_x − N_y over a shared D.
      const int64_t d = x.denKey == y.denKey
                            ? std::max<int64_t>(x.num, y.num)
                            : std::max<int64_t>(int64_t{x.num} + y.den, int64_t{y.num} + x.den);
      report.degree = std::max(report.degree, d);
      for (const DegreeValue* v : {&x, &y}) {
        report.argumentDegree =
            std::max(report.argumentDegree, degree::traits::largestArgument(v->traits, false));
        report.argumentDegreePPart =
            std::max(report.argumentDegreePPart, degree::traits::largestArgument(v->traits, true));
      }
    }
  }
  if (report.argumentDegree >= 0 || report.argumentDegreePPart >= 0) {
    // An exp is a random function only of an argument that went through exp, which puts that
    // argument among those whose p-part alone is free; then every exp is counted.
    const bool countExp = report.argumentDegreePPart >= 0;
    report.applications =
        randomFunctionApplications(a, countExp) + randomFunctionApplications(b, countExp);
  }
  return report;
}

double perTrialBound(int64_t degree, bool usesExp) {
  const double field = static_cast<double>(usesExp ? FieldParameters::q : FieldParameters::p);
  return std::min(1.0, static_cast<double>(degree) / field);
}

double collisionBound(const DegreeReport& report) {
  if (report.applications < 2) return 0.0;
  const double n = static_cast<double>(report.applications);
  const double pairs = n * (n - 1) / 2;
  const double p = static_cast<double>(FieldParameters::p);
  const double q = static_cast<double>(FieldParameters::q);
  double perPair = 0.0;
  if (report.argumentDegree >= 0) {
    const double d = 2.0 * static_cast<double>(std::max<int64_t>(report.argumentDegree, 1));
    perPair = std::max(perPair, (d / p) * (d / q));
  }
  if (report.argumentDegreePPart >= 0) {
    const double d = 2.0 * static_cast<double>(std::max<int64_t>(report.argumentDegreePPart, 1));
    perPair = std::max(perPair, d / q);
  }
  return std::min(1.0, pairs * perPair);
}

double perTrialBound(const DegreeReport& report) {
  return std::min(1.0, perTrialBound(report.degree, report.usesExp) + collisionBound(report));
}

double falseAcceptBound(double perTrial, int trials) {
  return std::pow(perTrial, trials);
}

int trialsForBound(double perTrial, double target, int maxTrials) {
  int trials = 1;
  while (trials < maxTrials && falseAcceptBound(perTrial, trials) > target) ++trials;
  return trials;
}

}  // namespace mugraph::verify
