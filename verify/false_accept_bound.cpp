#include "verify/false_accept_bound.h"

#include <cmath>
#include <random>

#include "graph/error.h"
#include "verify/degree_domain.h"
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
    }
  }
  return report;
}

double perTrialBound(int64_t degree, bool usesExp) {
  const double field = static_cast<double>(usesExp ? FieldParameters::q : FieldParameters::p);
  return std::min(1.0, static_cast<double>(degree) / field);
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
