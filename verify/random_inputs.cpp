// Random program inputs. The uniform draw is done by hand from mt19937_64's bits (not
// std::uniform_real_distribution, whose output differs between standard libraries) so a seed
// means the same inputs everywhere.
#include "verify/random_inputs.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "graph/error.h"

namespace mugraph::verify {

namespace {

double unitInterval(std::mt19937_64& generator) {
  return static_cast<double>(generator() >> 11) * 0x1.0p-53;  // [0, 1)
}

template <class Draw>
TensorMap<double> drawInputs(const graph::Program& program, uint64_t seed, Draw draw) {
  std::mt19937_64 generator(seed);
  TensorMap<double> inputs;
  for (graph::TensorId id : program.inputs) {
    const graph::TensorDesc& desc = program.tensors.at(id);
    HostTensor<double> tensor{desc.shape, std::vector<double>(graph::elementCount(desc.shape))};
    for (double& value : tensor.data) value = draw(generator);
    inputs[desc.name] = std::move(tensor);
  }
  return inputs;
}

}  // namespace

TensorMap<double> randomInputs(const graph::Program& program, uint64_t seed, double scale) {
  return drawInputs(program, seed, [scale](std::mt19937_64& generator) {
    return scale * (2.0 * unitInterval(generator) - 1.0);
  });
}

TensorMap<double> normalInputs(const graph::Program& program, uint64_t seed, double stddev) {
  // Box-Muller on two uniforms from the same bits, so a seed means the same inputs everywhere.
  return drawInputs(program, seed, [stddev](std::mt19937_64& generator) {
    const double u = 1.0 - unitInterval(generator);  // (0, 1]
    const double v = unitInterval(generator);
    return stddev * std::sqrt(-2.0 * std::log(u)) * std::cos(2.0 * M_PI * v);
  });
}

double inputStdForLogitStd(const graph::Program& program, double logitStd) {
  const auto readers = [&](graph::TensorId t) {
    std::vector<const graph::KernelOp*> found;
    for (const graph::KernelOp& op : program.ops) {
      if (std::find(op.inputs.begin(), op.inputs.end(), t) != op.inputs.end()) {
        found.push_back(&op);
      }
    }
    return found;
  };
  for (const graph::KernelOp& op : program.ops) {
    if (op.kind != graph::OpKind::Matmul) continue;
    double scale = 1.0;
    graph::TensorId logits = op.outputs[0];
    std::vector<const graph::KernelOp*> next = readers(logits);
    // A scale multiplies the spread; a causal mask leaves the kept logits as they are, and so,
    // for the spread asked, do an added bias or mask (drawn like every input) and a soft cap
    // (tanh between two scales, Gemma 2's), which only narrows the largest.
    const auto passesSpreadOn = [](const graph::KernelOp& op) {
      return op.kind == graph::OpKind::Scale || op.kind == graph::OpKind::CausalMask ||
             op.kind == graph::OpKind::Tanh || op.kind == graph::OpKind::Add ||
             op.kind == graph::OpKind::Sub;
    };
    while (next.size() == 1 && passesSpreadOn(*next[0])) {
      if (next[0]->kind == graph::OpKind::Scale) scale *= std::abs(next[0]->attrs.scale);
      logits = next[0]->outputs[0];
      next = readers(logits);
    }
    const bool softmax = std::any_of(next.begin(), next.end(), [](const graph::KernelOp* r) {
      return r->kind == graph::OpKind::Exp || r->kind == graph::OpKind::ReduceMax;
    });
    if (!softmax || scale == 0.0) continue;
    const double terms = static_cast<double>(program.tensors[op.inputs[0]].shape.back());
    return std::sqrt(logitStd / (scale * std::sqrt(terms)));
  }
  throw UserError("program '" + program.name + "'",
                  "has no attention logits (a matmul whose result, maybe scaled, feeds exp or "
                  "reduce_max)");
}

}  // namespace mugraph::verify
