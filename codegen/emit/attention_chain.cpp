// The chain of ops on S, O and their row vectors in wgmma accumulator registers (see
// attention_chain.h).
#include "codegen/emit/attention_chain.h"

#include "codegen/emit/warpgroup_printer.h"

namespace mugraph::codegen {
namespace {

// Scales folded into the exponent (FA3's exp2 with log2 e in the scale). An S tile that is
// scale(x, c) with c > 0 is held as x itself when every use can take it unscaled: a row max
// (scaled after the reduction), a causal mask (which commutes with the scale), or the
// difference x - r with a row whose only use is an exp, computed inside that exp as one
// fused multiply-add. Anything else needs the scaled values, and gets them as before.
constexpr double kLog2e = 1.4426950408889634;

}  // namespace

AttentionChain::AttentionChain(const EmitContext& context, const plan::WarpgroupAttentionPlan& at)
    : context_(context), out_(context.out), at_(at), block_(context.block()) {}

int AttentionChain::causalMaskOp() const {
  for (size_t o = 0; o < block_.ops.size(); ++o) {
    const graph::BlockOp& op = block_.ops[o];
    if (op.kind == graph::OpKind::CausalMask && at_.roles[op.output] == plan::FragmentRole::S) {
      return static_cast<int>(o);
    }
  }
  return -1;
}
std::string AttentionChain::causalRows(int mask) const {
  const graph::TensorId tile = block_.ops[mask].inputs[0];
  const graph::DimSplit& rows = context_.plan.splits.at(tile).end()[-2];
  const std::string first = context_.tileStart(tile, graph::kMaxRank - 2, "0");
  return first + ", min(" + first + " + " + str(at_.rows) + ", " + context_.extent(rows) +
         ") - 1";
}
std::string AttentionChain::causalShape(int mask) const {
  return context_.causalShape(block_.ops[mask]);
}

// causal_mask on S: a copy where the tile is below the diagonal, the mask across it.
void AttentionChain::emitCausalMask(int index) {
  const graph::BlockOp& op = block_.ops[index];
  const std::string x = name(op.inputs[0]);
  const std::string result = name(op.output);
  const std::string colStart = context_.tileStart(op.inputs[0], graph::kMaxRank - 1, "it");
  out_.open("if (mg::causal_tile_kept(" + causalRows(index) + ", " + colStart + ", " +
            str(at_.kv) + ", " + causalShape(index) + "))");
  out_.line("#pragma unroll");
  out_.line("for (int f = 0; f < " + str(at_.kv / 2) + "; ++f) " + result + "[f] = " + x +
            "[f];");
  out_.reopen("else");
  const std::string row = "consumer * " + str(at_.limits.wgmmaRows) +
                          " + warp * 16 + (lane >> 2) + ((f >> 1) & 1) * 8";
  const std::string col = "(f >> 2) * 8 + ((lane & 3) << 1) + (f & 1)";
  out_.line("#pragma unroll");
  out_.line("for (int f = 0; f < " + str(at_.kv / 2) + "; ++f) " + result +
            "[f] = " + context_.causalMask(op, x + "[f]", row, col, "it") + ";");
  out_.close();
}
void AttentionChain::loadScoreInput(int index) {
  const graph::BlockOp& input = block_.ops[index];
  const plan::InputCopy& copy = *context_.plan.inputs[index];
  const graph::TensorDesc& source =
      context_.plan.graph->tensors[context_.plan.kernel->inputs[input.kernelTensor]];
  // Storage order swaps the last two dims of a transposed tensor; a dim of extent 1 broadcasts.
  const bool transposed = source.layout == graph::Layout::Transposed;
  const int rowDim = transposed ? 3 : 2;
  const int colDim = transposed ? 2 : 3;
  const std::string base = name(input.output) + "_base";
  std::string offset;
  for (int axis = 0; axis < graph::kGridAxes; ++axis) {
    if (copy.blockStep[axis].coefficient == 0) continue;
    offset += (offset.empty() ? "" : " + ") + std::string("static_cast<long long>(") +
              kWarpgroupTile[axis] + ") * " + context_.product(copy.blockStep[axis]);
  }
  if (copy.iterationStep.coefficient != 0) {
    offset += (offset.empty() ? "" : " + ") + std::string("static_cast<long long>(it) * ") +
              context_.product(copy.iterationStep);
  }
  out_.line("const " + storageType(source.dtype) + "* const " + base + " = " +
            context_.paramName(context_.kernel.inputParams[input.kernelTensor]) +
            (offset.empty() ? "" : " + (" + offset + ")") + ";");
  const std::string row = "consumer * " + str(at_.limits.wgmmaRows) +
                          " + warp * 16 + (lane >> 2) + ((f >> 1) & 1) * 8";
  const std::string col = "(f >> 2) * 8 + ((lane & 3) << 1) + (f & 1)";
  const graph::Dims& tile = block_.tensors[input.output].shape;
  const bool rows = tile.end()[-2] > 1, cols = tile.back() > 1;
  std::vector<std::pair<std::string, std::string>> terms;
  if (copy.boxExtent[rowDim] > 1) {
    terms.push_back({"static_cast<long long>(" + row + ")",
                     context_.product(copy.globalStride[rowDim])});
  }
  if (copy.boxExtent[colDim] > 1) {
    terms.push_back({col, context_.product(copy.globalStride[colDim])});
  }
  const Index4 element4{"0", "0", rows ? row : "0", cols ? col : "0"};
  const std::string real = context_.realCondition(input.output, element4, "it");
  const std::string element = "mg::to_f32(" + base + "[" + linearExpression(terms) + "])";
  out_.line("float " + name(input.output) + "[" + str(at_.kv / 2) + "];");
  out_.line("#pragma unroll");
  out_.line("for (int f = 0; f < " + str(at_.kv / 2) + "; ++f) " + name(input.output) +
            "[f] = " + (real.empty() ? element : "(" + real + ") ? " + element + " : 0.0f") +
            ";");
}

int64_t AttentionChain::width(plan::FragmentRole role) const {
  return role == plan::FragmentRole::S   ? at_.kv / 2
         : role == plan::FragmentRole::O ? at_.dv / 2
                                         : 2;
}
// Real key positions of S-shaped tile `t` in this iteration, or "" where every position is
// real (partial tiles, graph/tile_splits.h) or where the padding already holds what the max
// and the sums need (keyPadding).
std::string AttentionChain::realKv(graph::TensorId t) const {
  if (keyPadding(t) != Padding::Unknown) return "";
  const std::string real = context_.realExtent(t, graph::kMaxRank - 1, "it");
  return real == str(at_.kv) ? "" : real;
}

// What S-shaped tile `t` holds at the key positions past the keys' end, for every real query
// row: a causal mask whose queries are the whole row dim over as many keys as rows (a prefill
// over its own tokens, static or a run-time length) keeps column c in row r only where c <= r,
// so every key past the end is -inf there; a positive scale, a row subtracted or added keep
// it, exp makes it 0, and a row multiplying or dividing keeps 0. Then the max needs no guard
// and the sums no zeroing.
AttentionChain::Padding AttentionChain::keyPadding(graph::TensorId t) const {
  const int producer = context_.plan.producer[t];
  if (producer < 0 || at_.roles[t] != plan::FragmentRole::S) return Padding::Unknown;
  const graph::BlockOp& op = block_.ops[producer];
  if (op.kind == graph::OpKind::CausalMask) {
    const graph::TileSplit& split = context_.plan.splits.at(op.inputs[0]);
    const graph::DimSplit& rows = split.end()[-2];
    const graph::DimSplit& cols = split.back();
    const bool square = op.attrs.queries == 0 && rows.extent == cols.extent &&
                        rows.dynamicDim == cols.dynamicDim;
    return square ? Padding::NegativeInfinity : Padding::Unknown;
  }
  const bool fromRow = op.inputs.size() == 2 && at_.roles[op.inputs[1]] == plan::FragmentRole::Row;
  const bool keeps = (op.kind == graph::OpKind::Scale && op.attrs.scale > 0) ||
                     ((op.kind == graph::OpKind::Sub || op.kind == graph::OpKind::Add) && fromRow);
  if (keeps) return keyPadding(op.inputs[0]) == Padding::NegativeInfinity
                        ? Padding::NegativeInfinity
                        : Padding::Unknown;
  if (op.kind == graph::OpKind::Exp && keyPadding(op.inputs[0]) == Padding::NegativeInfinity) {
    return Padding::Zero;
  }
  // A zero times or over a row (finite: the softmax's sum is at least 1) stays zero.
  const bool scaledByRow = (op.kind == graph::OpKind::Mul || op.kind == graph::OpKind::Div) && fromRow;
  if (scaledByRow && keyPadding(op.inputs[0]) == Padding::Zero) return Padding::Zero;
  return Padding::Unknown;
}

// Whether S-shaped tile `t` feeds a sum over key positions (a row sum, or P of P·V): its
// padding must be zero there. Padded query rows need nothing: rows never mix, Q's padding
// is zero-filled, so their values stay finite, and they are not stored.
bool AttentionChain::summedOverKv(graph::TensorId t) const {
  for (int consumer : context_.plan.consumers[t]) {
    const graph::BlockOp& op = block_.ops[consumer];
    if (op.kind == graph::OpKind::ReduceSum) return true;
    if (consumer == at_.secondMatmulOp && op.inputs[0] == t) return true;
  }
  return false;
}

// Operand `t` at fragment element f (row half h) of a tile of role `role`.
std::string AttentionChain::operand(graph::TensorId t, plan::FragmentRole role) const {
  return name(t) + (at_.roles[t] == plan::FragmentRole::Row && role != plan::FragmentRole::Row
                        ? "[(f >> 1) & 1]"
                        : "[f]");
}

// Whether op `index` is a scale held unscaled, folded into its exp (kLog2e above).
bool AttentionChain::heldUnscaled(int index) const {
  const graph::BlockOp& op = block_.ops[index];
  return op.kind == graph::OpKind::Scale && op.attrs.scale > 0 &&
         at_.roles[op.output] == plan::FragmentRole::S &&
         at_.roles[op.inputs[0]] == plan::FragmentRole::S && deferrable(op.output);
}

bool AttentionChain::deferrable(graph::TensorId t) const {
  for (int consumer : context_.plan.consumers[t]) {
    const graph::BlockOp& op = block_.ops[consumer];
    if (op.kind == graph::OpKind::ReduceMax) continue;
    if (op.kind == graph::OpKind::CausalMask && deferrable(op.output)) continue;
    if (op.kind == graph::OpKind::Sub && op.inputs[0] == t && foldedIntoExp(consumer)) continue;
    return false;
  }
  return true;
}

// Whether op `index` is x - r (x an S tile, r a row) whose only use is one exp.
bool AttentionChain::foldedIntoExp(int index) const {
  const graph::BlockOp& op = block_.ops[index];
  if (op.kind != graph::OpKind::Sub || at_.roles[op.inputs[0]] != plan::FragmentRole::S ||
      at_.roles[op.inputs[1]] != plan::FragmentRole::Row) {
    return false;
  }
  const std::vector<int>& uses = context_.plan.consumers[op.output];
  return uses.size() == 1 && block_.ops[uses[0]].kind == graph::OpKind::Exp;
}

// The factor by which S tile `t`'s array falls short of its value (1 where it is held as is).
double AttentionChain::unscaledBy(graph::TensorId t) const {
  const int producer = context_.plan.producer[t];
  if (producer < 0) return 1.0;
  const graph::BlockOp& op = block_.ops[producer];
  if (heldUnscaled(producer)) return op.attrs.scale * unscaledBy(op.inputs[0]);
  if (op.kind == graph::OpKind::CausalMask) return unscaledBy(op.inputs[0]);
  return 1.0;
}

void AttentionChain::emitOp(int index) {
  const graph::BlockOp& op = block_.ops[index];
  const plan::FragmentRole role = at_.roles[op.output];
  if (graph::isElementwise(op.kind)) {
    if (heldUnscaled(index)) {
      out_.line("float (&" + name(op.output) + ")[" + str(width(role)) + "] = " +
                name(op.inputs[0]) + ";  // held unscaled: the scale is folded into exp");
      return;
    }
    if (foldedIntoExp(index)) {
      out_.line("// computed in its exp");
      return;
    }
    std::vector<std::string> operands;
    for (graph::TensorId t : op.inputs) operands.push_back(operand(t, role));
    out_.line("float " + name(op.output) + "[" + str(width(role)) + "];");
    const int difference =
        op.kind == graph::OpKind::Exp ? context_.plan.producer[op.inputs[0]] : -1;
    if (op.kind == graph::OpKind::CausalMask) {
      emitCausalMask(index);
    } else if (difference >= 0 && foldedIntoExp(difference)) {
      // e^(c x - r) as 2^(x (c log2 e) - r log2 e): one fused multiply-add before the
      // special-function unit, where scale, subtract and exp took three instructions.
      const graph::BlockOp& sub = block_.ops[difference];
      const double factor = unscaledBy(sub.inputs[0]) * kLog2e;
      const std::string shift = name(op.output) + "_shift";
      out_.line("const float " + shift + "[2] = {" + name(sub.inputs[1]) + "[0] * " +
                floatLiteral(kLog2e) + ", " + name(sub.inputs[1]) + "[1] * " +
                floatLiteral(kLog2e) + "};");
      out_.line("#pragma unroll");
      out_.line("for (int f = 0; f < " + str(width(role)) + "; ++f) " + name(op.output) +
                "[f] = mg::exp2_approx(fmaf(" + name(sub.inputs[0]) + "[f], " +
                floatLiteral(factor) + ", -" + shift + "[(f >> 1) & 1]));");
    } else if (op.kind == graph::OpKind::Div && role != plan::FragmentRole::Row &&
               at_.roles[op.inputs[1]] == plan::FragmentRole::Row) {
      // By a row (the softmax's sum): one reciprocal per row, then products, where a
      // division per element took the slow path's checks each.
      const std::string inverse = name(op.output) + "_inverse";
      const std::string row = name(op.inputs[1]);
      out_.line("const float " + inverse + "[2] = {1.0f / " + row + "[0], 1.0f / " + row +
                "[1]};");
      out_.line("#pragma unroll");
      out_.line("for (int f = 0; f < " + str(width(role)) + "; ++f) " + name(op.output) +
                "[f] = " + operand(op.inputs[0], role) + " * " + inverse + "[(f >> 1) & 1];");
    } else {
      out_.line("#pragma unroll");
      out_.line("for (int f = 0; f < " + str(width(role)) + "; ++f) " + name(op.output) +
                "[f] = " + elementwiseExpression(op.kind, op.attrs, operands) + ";");
    }
    const std::string real = role == plan::FragmentRole::S ? realKv(op.output) : "";
    if (!real.empty() && summedOverKv(op.output)) {
      // Only the last iteration of a partial sequence has padding to zero.
      out_.open("if (" + real + " < " + str(at_.kv) + ")");
      out_.line("#pragma unroll");
      out_.line("for (int f = 0; f < " + str(width(role)) + "; ++f) if ((f >> 2) * 8 + " +
                "((lane & 3) << 1) + (f & 1) >= " + real + ") " + name(op.output) +
                "[f] = 0.0f;");
      out_.close();
    }
  } else if (op.kind == graph::OpKind::ReduceMax || op.kind == graph::OpKind::ReduceSum) {
    const bool max = op.kind == graph::OpKind::ReduceMax;
    const std::string x = name(op.inputs[0]);
    // A max over a partial row skips the padding (a sum adds its zeros): past the real key
    // positions a term is the max's identity.
    const std::string real = max ? realKv(op.inputs[0]) : "";
    const std::string term = x + "[4 * j + 2 * h + c]";
    out_.line("float " + name(op.output) + "[2];");
    // A tree over the thread's kv / 4 values of the row, then over the quad: a chain of
    // kv / 4 dependent instructions left the warp waiting on each one's latency.
    const auto reduce = [&](bool guarded) {
      const std::string value = guarded ? "(j * 8 + ((lane & 3) << 1) + c < " + real + " ? " +
                                              term + " : mg::negative_infinity())"
                                        : term;
      const auto combine = [&](const std::string& a, const std::string& b) {
        return max ? "mg::max_of(" + a + ", " + b + ")" : a + " + " + b;
      };
      out_.line("#pragma unroll");
      out_.open("for (int h = 0; h < 2; ++h)");
      out_.line("float part[" + str(at_.kv / 8) + "];");
      out_.line("#pragma unroll");
      out_.open("for (int j = 0; j < " + str(at_.kv / 8) + "; ++j)");
      out_.open("");
      out_.line("const int c = 0;");
      out_.line("part[j] = " + value + ";");
      out_.close();
      out_.open("");
      out_.line("const int c = 1;");
      out_.line("part[j] = " + combine("part[j]", value) + ";");
      out_.close();
      out_.close();
      for (int64_t w = at_.kv / 16; w > 0; w /= 2) {
        std::string level;
        for (int64_t j = 0; j < w; ++j) {
          const std::string a = "part[" + str(j) + "]", b = "part[" + str(j + w) + "]";
          level += (j == 0 ? "" : " ") + a + " = " + combine(a, b) + ";";
        }
        out_.line(level);
      }
      out_.line("float v = part[0];");
      out_.line(max ? "v = mg::max_of(v, __shfl_xor_sync(0xffffffffu, v, 1));"
                    : "v += __shfl_xor_sync(0xffffffffu, v, 1);");
      out_.line(max ? "v = mg::max_of(v, __shfl_xor_sync(0xffffffffu, v, 2));"
                    : "v += __shfl_xor_sync(0xffffffffu, v, 2);");
      // A positive scale commutes with the max, and rounding keeps the order: the max of
      // the unscaled values, scaled, is exactly the max of the scaled ones.
      const double unscaled = max ? unscaledBy(op.inputs[0]) : 1.0;
      out_.line(name(op.output) + "[h] = v" +
                (unscaled == 1.0 ? "" : " * " + floatLiteral(unscaled)) + ";");
      out_.close();
    };
    if (real.empty()) {
      reduce(false);
    } else {
      // Only the last iteration of a partial sequence has padding to skip.
      out_.open("if (" + real + " < " + str(at_.kv) + ")");
      reduce(true);
      out_.reopen("else");
      reduce(false);
      out_.close();
    }
  } else if (op.kind == graph::OpKind::AccumMax) {
    const std::string m = name(op.output);
    const std::string x = name(op.inputs[0]);
    out_.line("#pragma unroll");
    out_.open("for (int h = 0; h < 2; ++h)");
    out_.line("const float updated = it == 0 ? " + x + "[h] : mg::max_of(" + m + "[h], " + x +
              "[h]);");
    out_.line(m + "_factor[h] = it == 0 ? 0.0f : mg::exp(" + m + "[h] - updated);");
    out_.line(m + "[h] = updated;");
    out_.close();
  } else if (role == plan::FragmentRole::Row &&
             (op.kind == graph::OpKind::AccumSum || op.kind == graph::OpKind::AccumRescaledSum)) {
    const std::string acc = name(op.output);
    const std::string x = name(op.inputs[0]);
    const std::string scale = op.kind == graph::OpKind::AccumRescaledSum
                                  ? " * " + name(op.inputs[1]) + "_factor[h]"
                                  : "";
    out_.line("#pragma unroll");
    out_.line("for (int h = 0; h < 2; ++h) " + acc + "[h] = " + acc + "[h]" + scale + " + " + x +
              "[h];");
  }
}

}  // namespace mugraph::codegen
