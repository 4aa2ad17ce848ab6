#include "search/program_rewrites.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <optional>
#include <set>

#include "graph/builder.h"
#include "graph/hash.h"

namespace mugraph::search {
namespace {

using graph::GraphBuilder;
using graph::KernelOp;
using graph::OpKind;
using graph::Program;
using graph::TensorId;

// Emits the replacement of one op; returns the tensor that now holds the op's result.
using Emit = std::function<TensorId(GraphBuilder&, const std::vector<TensorId>& remap)>;

const KernelOp* producerOf(const Program& program, TensorId tensor) {
  for (const KernelOp& op : program.ops) {
    if (op.outputs.at(0) == tensor) return &op;
  }
  return nullptr;
}

std::string freshName(const Program& program, const GraphBuilder& builder,
                      const std::string& base) {
  for (int i = 0;; ++i) {
    std::string name = i == 0 ? base : base + std::to_string(i);
    if (!program.findTensor(name) && !builder.graph().findTensor(name)) return name;
  }
}

// The tensors of `program` as `builder` (made with its inputs) holds them: its inputs so far.
std::vector<TensorId> inputsRemapped(const Program& program, const GraphBuilder& builder) {
  std::vector<TensorId> remap(program.tensors.size(), -1);
  for (size_t i = 0; i < program.inputs.size(); ++i) {
    remap[program.inputs[i]] = builder.graph().inputs[i];
  }
  return remap;
}

// Copies `program` with op `at` replaced by `emit`, then drops ops nothing reads any more.
Program rebuild(const Program& program, size_t at, const Emit& emit) {
  GraphBuilder builder = GraphBuilder::withInputsOf(program, program.name);
  std::vector<TensorId> remap = inputsRemapped(program, builder);
  for (size_t i = 0; i < program.ops.size(); ++i) {
    const KernelOp& op = program.ops[i];
    const TensorId out = op.outputs.at(0);
    if (i == at) {
      remap[out] = emit(builder, remap);
      continue;
    }
    std::vector<TensorId> inputs;
    for (TensorId t : op.inputs) inputs.push_back(remap[t]);
    remap[out] = builder.op(op.kind, inputs, op.attrs, program.tensors[out].name);
  }
  for (TensorId t : program.outputs) builder.output(remap[t], program.tensors[t].layout);
  const Program rewritten = builder.graph();

  std::vector<bool> live(rewritten.tensors.size(), false);
  for (TensorId t : rewritten.outputs) live[t] = true;
  for (size_t i = rewritten.ops.size(); i-- > 0;) {
    const KernelOp& op = rewritten.ops[i];
    if (!live[op.outputs[0]]) continue;
    for (TensorId t : op.inputs) live[t] = true;
  }
  GraphBuilder pruned = GraphBuilder::withInputsOf(rewritten, rewritten.name);
  std::vector<TensorId> keep(rewritten.tensors.size(), -1);
  for (size_t i = 0; i < rewritten.inputs.size(); ++i) {
    keep[rewritten.inputs[i]] = pruned.graph().inputs[i];
  }
  for (const KernelOp& op : rewritten.ops) {
    if (!live[op.outputs[0]]) continue;
    std::vector<TensorId> inputs;
    for (TensorId t : op.inputs) inputs.push_back(keep[t]);
    keep[op.outputs[0]] =
        pruned.op(op.kind, inputs, op.attrs, rewritten.tensors[op.outputs[0]].name);
  }
  for (TensorId t : rewritten.outputs) pruned.output(keep[t], rewritten.tensors[t].layout);
  return pruned.finish();
}

// `program` with each op that computes what an op before it does (the same kind, inputs and
// attributes; not a program output) dropped and its readers reading that op's result.
Program mergedEqualOps(const Program& program) {
  GraphBuilder builder = GraphBuilder::withInputsOf(program, program.name);
  std::vector<TensorId> remap = inputsRemapped(program, builder);
  for (const KernelOp& op : program.ops) {
    const TensorId out = op.outputs.at(0);
    std::vector<TensorId> inputs;
    for (TensorId t : op.inputs) inputs.push_back(remap[t]);
    const bool isOutput =
        std::find(program.outputs.begin(), program.outputs.end(), out) != program.outputs.end();
    const auto& built = builder.graph().ops;
    const auto same = std::find_if(built.begin(), built.end(), [&](const KernelOp& other) {
      return other.kind == op.kind && other.inputs == inputs && other.attrs == op.attrs;
    });
    remap[out] = same != built.end() && !isOutput
                     ? same->outputs[0]
                     : builder.op(op.kind, inputs, op.attrs, program.tensors[out].name);
  }
  for (TensorId t : program.outputs) builder.output(remap[t], program.tensors[t].layout);
  return builder.finish();
}

// matmul(div(E, S), Y) -> div(matmul(E, Y), S) where S is constant along the contracted dim.
std::optional<Program> divPastMatmul(const Program& program, size_t at) {
  const KernelOp& matmul = program.ops[at];
  if (matmul.kind != OpKind::Matmul) return std::nullopt;
  const KernelOp* div = producerOf(program, matmul.inputs[0]);
  if (!div || div->kind != OpKind::Div) return std::nullopt;
  const TensorId numerator = div->inputs[0], denominator = div->inputs[1];
  const graph::Dims& shape = program.tensors[div->outputs[0]].shape;
  if (program.tensors[numerator].shape != shape) return std::nullopt;
  if (program.tensors[denominator].shape.back() != 1) return std::nullopt;
  const std::string name = program.tensors[matmul.outputs[0]].name;
  return rebuild(program, at, [&](GraphBuilder& b, const std::vector<TensorId>& remap) {
    const TensorId product = b.op(OpKind::Matmul, {remap[numerator], remap[matmul.inputs[1]]}, {},
                                  freshName(program, b, name + "_num"));
    return b.op(OpKind::Div, {product, remap[denominator]}, {}, name);
  });
}

// matmul(rms_norm(X, last dim), W) -> div(matmul(X, W), sqrt(scale(reduce_sum(square(X)), 1/n)))
std::optional<Program> rmsNormPastMatmul(const Program& program, size_t at) {
  const KernelOp& matmul = program.ops[at];
  if (matmul.kind != OpKind::Matmul) return std::nullopt;
  const KernelOp* norm = producerOf(program, matmul.inputs[0]);
  if (!norm || norm->kind != OpKind::RmsNorm) return std::nullopt;
  const TensorId x = norm->inputs[0];
  const graph::Dims& shape = program.tensors[x].shape;
  const int last = static_cast<int>(shape.size()) - 1;
  if (norm->attrs.dim != last) return std::nullopt;
  const std::string name = program.tensors[matmul.outputs[0]].name;
  return rebuild(program, at, [&](GraphBuilder& b, const std::vector<TensorId>& remap) {
    const TensorId product = b.op(OpKind::Matmul, {remap[x], remap[matmul.inputs[1]]}, {},
                                  freshName(program, b, name + "_num"));
    const TensorId squares = b.op(OpKind::Square, {remap[x]}, {}, freshName(program, b, "sq"));
    graph::OpAttrs sumAttrs;
    sumAttrs.dim = last;
    const TensorId sum =
        b.op(OpKind::ReduceSum, {squares}, sumAttrs, freshName(program, b, "sumsq"));
    graph::OpAttrs meanAttrs;
    meanAttrs.scale = 1.0 / static_cast<double>(shape[last]);
    const TensorId mean = b.op(OpKind::Scale, {sum}, meanAttrs, freshName(program, b, "meansq"));
    const TensorId root = b.op(OpKind::Sqrt, {mean}, {}, freshName(program, b, "rms"));
    return b.op(OpKind::Div, {product, root}, {}, name);
  });
}

// Ops reading `tensor`.
std::vector<const KernelOp*> readersOf(const Program& program, TensorId tensor) {
  std::vector<const KernelOp*> readers;
  for (const KernelOp& op : program.ops) {
    if (std::find(op.inputs.begin(), op.inputs.end(), tensor) != op.inputs.end()) {
      readers.push_back(&op);
    }
  }
  return readers;
}

// Whether `a` is already x − reduce_max(x) over `dim`.
bool shiftedByItsMax(const Program& program, TensorId a, int dim) {
  const KernelOp* sub = producerOf(program, a);
  if (!sub || sub->kind != OpKind::Sub) return false;
  const KernelOp* max = producerOf(program, sub->inputs[1]);
  return max && max->kind == OpKind::ReduceMax && max->inputs[0] == sub->inputs[0] &&
         max->attrs.dim == dim;
}

// E = exp(A) read only as a softmax, E / reduce_sum(E, dim) (the sum read only as that
// denominator) -> E = exp(A − reduce_max(A, dim)): the factor exp(−max) cancels in the
// quotient, and no exp overflows where the softmax is finite.
std::optional<Program> safeSoftmax(const Program& program, size_t at) {
  const KernelOp& exp = program.ops[at];
  if (exp.kind != OpKind::Exp) return std::nullopt;
  const TensorId e = exp.outputs[0];
  if (std::find(program.outputs.begin(), program.outputs.end(), e) != program.outputs.end()) {
    return std::nullopt;
  }
  int dim = -1;
  bool divided = false;
  for (const KernelOp* reader : readersOf(program, e)) {
    if (reader->kind == OpKind::ReduceSum && reader->inputs[0] == e && reader->attrs.to == 1 &&
        (dim < 0 || dim == reader->attrs.dim)) {
      dim = reader->attrs.dim;
      const TensorId sum = reader->outputs[0];
      if (std::find(program.outputs.begin(), program.outputs.end(), sum) != program.outputs.end()) {
        return std::nullopt;
      }
      for (const KernelOp* user : readersOf(program, sum)) {
        if (user->kind != OpKind::Div || user->inputs[1] != sum || user->inputs[0] != e) {
          return std::nullopt;
        }
      }
    } else if (reader->kind == OpKind::Div && reader->inputs[0] == e && reader->inputs[1] != e) {
      const KernelOp* sum = producerOf(program, reader->inputs[1]);
      if (!sum || sum->kind != OpKind::ReduceSum || sum->inputs[0] != e) return std::nullopt;
      divided = true;
    } else {
      return std::nullopt;
    }
  }
  const TensorId a = exp.inputs[0];
  if (dim < 0 || !divided || shiftedByItsMax(program, a, dim)) return std::nullopt;
  const std::string name = program.tensors[e].name;
  return rebuild(program, at, [&](GraphBuilder& b, const std::vector<TensorId>& remap) {
    graph::OpAttrs maxAttrs;
    maxAttrs.dim = dim;
    const TensorId max =
        b.op(OpKind::ReduceMax, {remap[a]}, maxAttrs, freshName(program, b, name + "_max"));
    const TensorId shifted =
        b.op(OpKind::Sub, {remap[a], max}, {}, freshName(program, b, name + "_shifted"));
    return b.op(OpKind::Exp, {shifted}, {}, name);
  });
}

// The ops a value computed by op `at` is made of back to its "materialized" sources (program
// inputs and matmul results, which are shared): the indices of the cheap ops that compute it,
// in program order, or nothing where that is more than kMaxRecomputedOps ops.
constexpr size_t kMaxRecomputedOps = 16;

std::optional<std::vector<size_t>> cheapCone(const Program& program, size_t at) {
  std::vector<int> producer(program.tensors.size(), -1);
  for (size_t i = 0; i < program.ops.size(); ++i) {
    producer[program.ops[i].outputs.at(0)] = static_cast<int>(i);
  }
  std::set<size_t> cone = {at};
  std::vector<size_t> frontier = {at};
  while (!frontier.empty()) {
    const size_t i = frontier.back();
    frontier.pop_back();
    for (TensorId t : program.ops[i].inputs) {
      const int p = producer[t];
      if (p < 0 || program.ops[p].kind == OpKind::Matmul || cone.count(p)) continue;
      cone.insert(p);
      if (cone.size() > kMaxRecomputedOps) return std::nullopt;
      frontier.push_back(p);
    }
  }
  return std::vector<size_t>(cone.begin(), cone.end());
}

// recomputedPrologues' one step: the value op `at` computes, if several matmuls read it.
std::optional<Program> recomputePerReader(const Program& program, size_t at) {
  const TensorId shared = program.ops[at].outputs.at(0);
  if (program.ops[at].kind == OpKind::Matmul ||
      std::find(program.outputs.begin(), program.outputs.end(), shared) != program.outputs.end()) {
    return std::nullopt;
  }
  std::vector<size_t> readers;
  for (size_t i = 0; i < program.ops.size(); ++i) {
    const KernelOp& op = program.ops[i];
    if (std::find(op.inputs.begin(), op.inputs.end(), shared) == op.inputs.end()) continue;
    if (op.kind != OpKind::Matmul || op.inputs[0] != shared || op.inputs[1] == shared) {
      return std::nullopt;
    }
    readers.push_back(i);
  }
  if (readers.size() < 2) return std::nullopt;
  const std::optional<std::vector<size_t>> cone = cheapCone(program, at);
  if (!cone) return std::nullopt;

  GraphBuilder builder = GraphBuilder::withInputsOf(program, program.name);
  std::vector<TensorId> remap = inputsRemapped(program, builder);
  for (size_t i = 0; i < program.ops.size(); ++i) {
    const KernelOp& op = program.ops[i];
    std::vector<TensorId> inputs;
    for (TensorId t : op.inputs) inputs.push_back(remap[t]);
    const auto reader = std::find(readers.begin(), readers.end(), i);
    if (reader != readers.begin() && reader != readers.end()) {
      // This matmul's own copy of the cone, named after it.
      std::vector<TensorId> copy = remap;
      const std::string suffix = "_for_" + program.tensors[op.outputs[0]].name;
      for (size_t c : *cone) {
        const KernelOp& coneOp = program.ops[c];
        std::vector<TensorId> coneInputs;
        for (TensorId t : coneOp.inputs) coneInputs.push_back(copy[t]);
        copy[coneOp.outputs[0]] = builder.op(
            coneOp.kind, coneInputs, coneOp.attrs,
            freshName(program, builder, program.tensors[coneOp.outputs[0]].name + suffix));
      }
      inputs[0] = copy[shared];
    }
    remap[op.outputs[0]] = builder.op(op.kind, inputs, op.attrs, program.tensors[op.outputs[0]].name);
  }
  for (TensorId t : program.outputs) builder.output(remap[t], program.tensors[t].layout);
  return builder.finish();
}

using RuleFunction = std::optional<Program> (*)(const Program&, size_t);

struct RuleEntry {
  RewriteRule rule;
  RuleFunction apply;
};

// clang-format off
const std::vector<RuleEntry> kRules = {
  {{"div_past_matmul", "matmul(div(E, S), Y) = div(matmul(E, Y), S)  if S is size 1 along the contracted dim"},
   divPastMatmul},
  {{"rms_norm_past_matmul", "matmul(rms_norm(X), W) = div(matmul(X, W), sqrt(mean(square(X))))  over X's last dim"},
   rmsNormPastMatmul},
  {{"safe_softmax", "div(exp(A), reduce_sum(exp(A), d)) = div(exp(A - m), reduce_sum(exp(A - m), d))  with m = reduce_max(A, d)"},
   safeSoftmax},
};
// clang-format on

}  // namespace

const std::vector<RewriteRule>& rewriteRules() {
  static const std::vector<RewriteRule> rules = [] {
    std::vector<RewriteRule> out;
    for (const RuleEntry& entry : kRules) out.push_back(entry.rule);
    return out;
  }();
  return rules;
}

std::vector<ProgramForm> programForms(const graph::Program& program, int maxForms,
                                      bool mergeEqualOps) {
  std::vector<ProgramForm> forms = {ProgramForm{program, {}}};
  std::set<uint64_t> seen = {graph::programHash(program)};
  for (size_t next = 0; next < forms.size(); ++next) {
    for (const RuleEntry& entry : kRules) {
      for (size_t at = 0; at < forms[next].program.ops.size(); ++at) {
        if (static_cast<int>(forms.size()) >= maxForms) return forms;
        std::optional<Program> rewritten = entry.apply(forms[next].program, at);
        if (rewritten && mergeEqualOps) rewritten = mergedEqualOps(*rewritten);
        if (!rewritten || !seen.insert(graph::programHash(*rewritten)).second) continue;
        ProgramForm form{std::move(*rewritten), forms[next].rulesApplied};
        form.rulesApplied.push_back(entry.rule.name);
        forms.push_back(std::move(form));
      }
    }
  }
  return forms;
}

std::optional<graph::Program> recomputedPrologues(const graph::Program& program) {
  std::optional<Program> current;
  for (bool changed = true; changed;) {
    changed = false;
    const Program& from = current ? *current : program;
    for (size_t at = 0; at < from.ops.size(); ++at) {
      if (std::optional<Program> next = recomputePerReader(from, at)) {
        current = std::move(next);
        changed = true;
        break;
      }
    }
  }
  return current;
}

int unshiftedExps(const graph::Program& program) {
  int count = 0;
  for (const KernelOp& op : program.ops) {
    if (op.kind != OpKind::Exp) continue;
    const KernelOp* sub = producerOf(program, op.inputs[0]);
    const KernelOp* max =
        sub && sub->kind == OpKind::Sub ? producerOf(program, sub->inputs[1]) : nullptr;
    const bool shifted = max && max->kind == OpKind::ReduceMax && max->inputs[0] == sub->inputs[0];
    count += shifted ? 0 : 1;
  }
  return count;
}

std::vector<ProgramForm> numericallySafeForms(std::vector<ProgramForm> forms) {
  int fewest = std::numeric_limits<int>::max();
  for (const ProgramForm& form : forms) fewest = std::min(fewest, unshiftedExps(form.program));
  std::vector<ProgramForm> safe;
  for (ProgramForm& form : forms) {
    if (unshiftedExps(form.program) == fewest) safe.push_back(std::move(form));
  }
  return safe;
}

}  // namespace mugraph::search
