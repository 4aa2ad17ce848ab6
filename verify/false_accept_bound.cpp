#include "verify/false_accept_bound.h"

#include <cmath>
#include <functional>
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

// How many times max compares two operands in one op on operands of these shapes: at most
// once per operand element, for reduce_max and accum_max alike.
int64_t comparisonsOfMax(graph::OpKind kind, const graph::OpAttrs&, const graph::Dims& operand) {
  const bool max = kind == graph::OpKind::ReduceMax || kind == graph::OpKind::AccumMax;
  return max ? graph::elementCount(operand) : 0;
}

// What `perOp` counts over one evaluation of `g` (given each op's kind, attributes and first
// operand's shape): every kernel op once, every block op once per block and, before the
// accumulators, once per iteration.
using PerOpCount =
    std::function<int64_t(graph::OpKind, const graph::OpAttrs&, const graph::Dims& operand)>;
int64_t countOverEvaluation(const graph::KernelGraph& g, const PerOpCount& perOp) {
  const KernelPlan plan = planKernelGraph(g);
  int64_t total = 0;
  for (const KernelStep& step : plan.steps) {
    const graph::KernelOp& op = *step.op;
    if (op.kind != graph::OpKind::BlockGraph) {
      total += perOp(op.kind, op.attrs, g.tensors[op.inputs.at(0)].shape);
      continue;
    }
    const BlockPlan& block = step.block;
    const int64_t blocks = block.grid[0] * block.grid[1] * block.grid[2];
    const auto count = [&](const std::vector<BlockStep>& steps, int64_t times) {
      for (const BlockStep& s : steps) {
        if (s.inputs.empty()) continue;
        total += times * perOp(s.kind, s.attrs, block.tileShapes.at(s.inputs[0]));
      }
    };
    count(block.perIteration, blocks * block.forloop);
    count(block.postLoop, blocks);
  }
  return total;
}

// Both graphs' count of `perOp`.
int64_t countOverBoth(const graph::KernelGraph& a, const graph::KernelGraph& b,
                      const PerOpCount& perOp) {
  return countOverEvaluation(a, perOp) + countOverEvaluation(b, perOp);
}

// Probability that two distinct values whose difference has a numerator of degree at most
// 2·`degree` agree on their p-parts in one trial (Schwartz–Zippel over `size` points).
double pPartsCollide(int64_t degree, uint64_t size) {
  return 2.0 * static_cast<double>(std::max<int64_t>(degree, 1)) / static_cast<double>(size);
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
  ReferenceEvaluations::DegreeEvaluation evaluationA;
  if (cache) {
    evaluationA = cache->degreeOutputs(inputs, seed);
  } else {
    ArgumentTally tally;
    evaluationA.outputs = evaluate(a, inputs, TrialMeaning{.arguments = &tally});
    evaluationA.arguments = tally.counts();
  }
  const TensorMap<DegreeValue>& outA = evaluationA.outputs;
  ArgumentTally tallyB;
  const TensorMap<DegreeValue> outB = evaluate(b, inputs, TrialMeaning{.arguments = &tallyB});
  DegreeReport report;
  report.bothPartsArguments = evaluationA.arguments;
  *report.bothPartsArguments += tallyB.counts();
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
        using degree::traits::Group;
        using degree::traits::largestArgument;
        report.argumentDegree =
            std::max(report.argumentDegree, largestArgument(v->traits, Group::kBothParts));
        report.argumentDegreePPart =
            std::max(report.argumentDegreePPart, largestArgument(v->traits, Group::kPPartAlone));
        report.maxOperandDegree =
            std::max(report.maxOperandDegree, largestArgument(v->traits, Group::kMaxOperand));
      }
    }
  }
  if (report.argumentDegree >= 0 || report.argumentDegreePPart >= 0) {
    // An exp is a random function only of an argument that went through exp, which puts that
    // argument among those whose p-part alone is free; then every exp is counted.
    const bool countExp = report.argumentDegreePPart >= 0;
    report.applications = countOverBoth(
        a, b,
        [countExp](graph::OpKind kind, const graph::OpAttrs& attrs, const graph::Dims& operand) {
          return randomFunctionValues(kind, attrs, operand, countExp);
        });
  }
  if (report.maxOperandDegree >= 0) report.maxComparisons = countOverBoth(a, b, comparisonsOfMax);
  return report;
}

double perTrialBound(int64_t degree, bool usesExp) {
  const double field = static_cast<double>(usesExp ? FieldParameters::q : FieldParameters::p);
  return std::min(1.0, static_cast<double>(degree) / field);
}

namespace {

// Keyed on both parts (finite_field.h): the p-parts and the q-parts of two distinct arguments
// of degree at most d, evaluations at independent points, must both agree.
double bothPartsCollide(int64_t degree) {
  return pPartsCollide(degree, FieldParameters::p) * pPartsCollide(degree, FieldParameters::q);
}

// The union bound over pairs of the counted applications, each pair at its larger degree:
// a pair within one degree, then each application with every one of a lower degree.
double pairsByDegree(const ArgumentCounts& counts) {
  double bound = 0.0, lower = 0.0;
  for (size_t d = 0; d < counts.byDegree.size(); ++d) {
    const double n = static_cast<double>(counts.byDegree[d]);
    if (n == 0) continue;
    const int64_t degree = d < ArgumentCounts::kExact ? static_cast<int64_t>(d) : counts.largest;
    bound += (n * (n - 1) / 2 + n * lower) * bothPartsCollide(degree);
    lower += n;
  }
  return bound;
}

}  // namespace

double collisionBound(const DegreeReport& report, MaxMeaning meaning) {
  double bound = 0.0;
  if (report.applications >= 2) {
    const double pairs =
        static_cast<double>(report.applications) * static_cast<double>(report.applications - 1) / 2;
    const double pPartAlone = report.argumentDegreePPart >= 0
                                  ? pPartsCollide(report.argumentDegreePPart, FieldParameters::q)
                                  : 0.0;
    const double bothParts =
        report.argumentDegree >= 0 ? bothPartsCollide(report.argumentDegree) : 0.0;
    double term = pairs * std::max(bothParts, pPartAlone);
    // Two arguments keyed on both parts collide only with each other (a value without a
    // q-part never keys like one with): their pairs at their own degrees, every other pair at
    // the p-part's bound.
    if (report.bothPartsArguments && report.argumentDegree >= 0) {
      term = std::min(term, pairsByDegree(*report.bothPartsArguments) + pairs * pPartAlone);
    }
    bound += term;
  }
  if (meaning == MaxMeaning::Selection && report.maxOperandDegree >= 0) {
    bound += static_cast<double>(report.maxComparisons) *
             pPartsCollide(report.maxOperandDegree, FieldParameters::q);
  }
  return std::min(1.0, bound);
}

double perTrialBound(const DegreeReport& report, MaxMeaning meaning) {
  return std::min(1.0,
                  perTrialBound(report.degree, report.usesExp) + collisionBound(report, meaning));
}

double falseAcceptBound(double perTrial, int trials) {
  return std::pow(perTrial, trials);
}

int trialsForBound(double perTrial, double target, int maxTrials) {
  // A per-trial bound of 1 (a random function applied to millions of values: the collision
  // term alone passes 1) stays 1 however many trials run: a few catch what a wrong schedule
  // usually shows, and the verdict states the bound of 1.
  if (perTrial >= 1.0) return std::min(maxTrials, kTrialsWithoutBound);
  int trials = 1;
  while (trials < maxTrials && falseAcceptBound(perTrial, trials) > target) ++trials;
  return trials;
}

}  // namespace mugraph::verify
