// RoPE as `transformers` writes it, given to partitionModel as the plain records any front end
// (the ONNX reader, the FX front end) fills in: the head transpose [b, s, h, d] -> [b, h, s, d]
// read through the heads_transposed layout, Slice/Slice/Neg/Concat on the last axis mapped to
// rotate_half, and the program checked against the formula written by hand (finite field); the
// interleaved RoPE of GPT-J (Slice 0::2 and 1::2, Neg, new last axes, Concat, Reshape) mapped to
// rotate_pairs the same way. Patterns that are not rotations stay with the framework, with the
// reason. A head transpose of a computed value (after rotate_pairs too) joins its subgraph
// where the pushdown applies, else stays a view.
#include <gtest/gtest.h>

#include <limits>

#include "graph/program_text.h"
#include "onnx_import/import_model.h"
#include "verify/equivalence.h"

namespace mugraph::onnx_import {
namespace {

class Records {
 public:
  Records() {
    model_.path = "rope.test";
    model_.opset = 20;
  }
  void tensor(const std::string& name, graph::Dims shape, bool graphInput = false) {
    Value v{name, "float16", graph::DType::F16, shape, "", false, graphInput, {}};
    model_.values[name] = v;
    if (graphInput) model_.graphInputs.push_back(name);
  }
  void constant(const std::string& name, double value) { constants(name, {value}); }
  void constants(const std::string& name, std::vector<double> values) {
    const graph::Dims shape{static_cast<int64_t>(values.size())};
    model_.values[name] = Value{name, "int64", std::nullopt, shape, "", true, false, {}};
    model_.constants[name] = Constant{shape, std::move(values)};
  }
  Node& node(const std::string& op, std::vector<std::string> in, const std::string& out,
             graph::Dims shape) {
    tensor(out, shape);
    model_.producers[out] = static_cast<int>(model_.nodes.size());
    model_.nodes.push_back(Node{op + "_" + out, op, "", std::move(in), {out}, {}, "", ""});
    return model_.nodes.back();
  }
  void output(const std::string& name) { model_.graphOutputs.push_back(name); }
  const Model& model() const { return model_; }

 private:
  Model model_;
};

// Y = x·cos + rotate_half(x)·sin of the head transpose x of X [1, 16, 4, 32]; `lowFirst`
// concatenates the halves in the wrong order (not rotate_half).
Records rope(bool lowFirst = false, bool sliceReadElsewhere = false) {
  Records r;
  r.tensor("X", {1, 16, 4, 32}, true);
  r.tensor("cos", {16, 32}, true);
  r.tensor("sin", {16, 32}, true);
  for (const auto& [name, v] : std::vector<std::pair<std::string, double>>{
           {"zero", 0},
           {"half", 16},
           {"end", static_cast<double>(std::numeric_limits<int64_t>::max())},
           {"last", -1},
           {"one", 1}}) {
    r.constant(name, v);
  }
  Node& t = r.node("Transpose", {"X"}, "x", {1, 4, 16, 32});
  t.attributes["perm"].ints = {0, 2, 1, 3};
  r.node("Slice", {"x", "zero", "half", "last", "one"}, "lo", {1, 4, 16, 16});
  r.node("Slice", {"x", "half", "end", "last", "one"}, "hi", {1, 4, 16, 16});
  r.node("Neg", {"hi"}, "neg", {1, 4, 16, 16});
  Node& cat = r.node(
      "Concat",
      lowFirst ? std::vector<std::string>{"lo", "neg"} : std::vector<std::string>{"neg", "lo"},
      "rot", {1, 4, 16, 32});
  cat.attributes["axis"].i = -1;
  r.node("Mul", {"x", "cos"}, "a", {1, 4, 16, 32});
  r.node("Mul", {"rot", "sin"}, "b", {1, 4, 16, 32});
  r.node("Add", {"a", "b"}, "Y", {1, 4, 16, 32});
  r.output("Y");
  if (sliceReadElsewhere) {
    r.node("Exp", {"lo"}, "E", {1, 4, 16, 16});
    r.output("E");
  }
  return r;
}

TEST(RopeMapping, RotateHalfOverTheHeadTransposeMatchesTheFormula) {
  const ImportedModel m = partitionModel(rope().model());
  ASSERT_EQ(m.subgraphs.size(), 1u);
  EXPECT_TRUE(m.unsupported.empty()) << m.unsupported[0].node << ": " << m.unsupported[0].reason;
  const Subgraph& s = m.subgraphs[0];
  ASSERT_EQ(s.inputs[0].value, "x");
  EXPECT_EQ(s.inputs[0].buffer, "X");
  EXPECT_EQ(s.inputs[0].layout, graph::Layout::HeadsTransposed);
  const graph::Program expected = graph::parseProgramText(
      "program p\ninput x f16 [4, 16, 32] layout=heads_transposed\ninput cos f16 [1, 16, 32]\n"
      "input sin f16 [1, 16, 32]\nY = add(mul(x, cos), mul(rotate_half(x, dim=2), sin))\n"
      "output Y\n",
      "expected.mg");
  const verify::EquivalenceReport report = verify::checkEquivalence(s.program, expected, {});
  EXPECT_TRUE(report.equivalent) << report.mismatch << "\n" << graph::programToText(s.program);
  EXPECT_EQ(report.level, verify::VerificationLevel::FiniteField);
  for (const char* op : {"Slice", "Neg", "Concat", "Transpose"}) {
    EXPECT_TRUE(std::count(s.ops.begin(), s.ops.end(), op)) << op << " not in the subgraph";
  }
}

TEST(RopeMapping, OtherConcatsOfSlicesStayWithTheFramework) {
  for (const bool lowFirst : {true, false}) {
    const ImportedModel m = partitionModel(rope(lowFirst, !lowFirst).model());
    bool concatLeft = false;
    for (const LeftOut& u : m.unsupported) {
      if (u.op == "Concat") {
        concatLeft = true;
        EXPECT_NE(u.reason.find("no mapping"), std::string::npos) << u.reason;
      }
    }
    EXPECT_TRUE(concatLeft) << (lowFirst ? "halves in the other order" : "a slice read elsewhere");
    for (const Subgraph& s : m.subgraphs) {
      EXPECT_EQ(graph::programToText(s.program).find("rotate_half"), std::string::npos);
    }
  }
}

// How the interleaved RoPE below is written, or where it is not rotate_pairs, how it differs.
enum class Pairs {
  Unsqueezed,             // new last axes by Unsqueeze, as torch.onnx writes torch.stack
  Reshaped,               // by Reshape, as a front end may write it
  EvenFirst,              // stacks x[..., ::2] before -x[..., 1::2]: not rotate_pairs
  OddSliceReadElsewhere,  // x[..., 1::2] also read by another node: the group is not whole
  BeforeHeadTranspose,    // Unsqueezed, its result read through the head transpose (GPT-J)
};

// Y = x·cos + rotate_pairs(x)·sin over X [1, 16, 4, 32] (GPT-J's RoPE before its head
// transpose), cos and sin per (s, d): `torch.stack((-x[..., 1::2], x[..., ::2]), -1)
// .flatten(-2)` as ONNX nodes.
Records interleavedRope(Pairs form) {
  Records r;
  r.tensor("X", {1, 16, 4, 32}, true);
  r.tensor("cos", {1, 16, 1, 32}, true);
  r.tensor("sin", {1, 16, 1, 32}, true);
  for (const auto& [name, v] : std::vector<std::pair<std::string, double>>{
           {"zero", 0},
           {"one", 1},
           {"two", 2},
           {"end", static_cast<double>(std::numeric_limits<int64_t>::max())},
           {"last", -1}}) {
    r.constant(name, v);
  }
  r.constants("stacked", {1, 16, 4, 16, 1});
  r.constants("flat", {1, 16, 4, 32});
  r.node("Slice", {"X", "zero", "end", "last", "two"}, "even", {1, 16, 4, 16});
  r.node("Slice", {"X", "one", "end", "last", "two"}, "odd", {1, 16, 4, 16});
  r.node("Neg", {"odd"}, "neg", {1, 16, 4, 16});
  const bool reshaped = form == Pairs::Reshaped;
  r.node(reshaped ? "Reshape" : "Unsqueeze", {"neg", reshaped ? "stacked" : "last"}, "neg1",
         {1, 16, 4, 16, 1});
  r.node(reshaped ? "Reshape" : "Unsqueeze", {"even", reshaped ? "stacked" : "last"}, "even1",
         {1, 16, 4, 16, 1});
  Node& cat = r.node("Concat",
                     form == Pairs::EvenFirst ? std::vector<std::string>{"even1", "neg1"}
                                              : std::vector<std::string>{"neg1", "even1"},
                     "stack", {1, 16, 4, 16, 2});
  cat.attributes["axis"].i = -1;
  r.node("Reshape", {"stack", "flat"}, "rot", {1, 16, 4, 32});
  r.node("Mul", {"X", "cos"}, "a", {1, 16, 4, 32});
  r.node("Mul", {"rot", "sin"}, "b", {1, 16, 4, 32});
  r.node("Add", {"a", "b"}, "Y", {1, 16, 4, 32});
  if (form == Pairs::BeforeHeadTranspose) {
    r.node("Transpose", {"Y"}, "T", {1, 4, 16, 32}).attributes["perm"].ints = {0, 2, 1, 3};
    r.node("Exp", {"T"}, "E", {1, 4, 16, 32});
    r.output("E");
    return r;
  }
  r.output("Y");
  if (form == Pairs::OddSliceReadElsewhere) {
    r.node("Exp", {"odd"}, "E", {1, 16, 4, 16});
    r.output("E");
  }
  return r;
}

TEST(RopeMapping, InterleavedRotationMatchesTheFormulaAsRotatePairs) {
  for (const Pairs form : {Pairs::Unsqueezed, Pairs::Reshaped}) {
    SCOPED_TRACE(form == Pairs::Unsqueezed ? "Unsqueeze" : "Reshape");
    const ImportedModel m = partitionModel(interleavedRope(form).model());
    ASSERT_EQ(m.subgraphs.size(), 1u);
    EXPECT_TRUE(m.unsupported.empty()) << m.unsupported[0].node << ": " << m.unsupported[0].reason;
    const Subgraph& s = m.subgraphs[0];
    const graph::Program expected = graph::parseProgramText(
        "program p\ninput X f16 [16, 4, 32]\ninput cos f16 [16, 1, 32]\n"
        "input sin f16 [16, 1, 32]\nY = add(mul(X, cos), mul(rotate_pairs(X, dim=2), sin))\n"
        "output Y\n",
        "expected.mg");
    const verify::EquivalenceReport report = verify::checkEquivalence(s.program, expected, {});
    EXPECT_TRUE(report.equivalent) << report.mismatch << "\n" << graph::programToText(s.program);
    EXPECT_EQ(report.level, verify::VerificationLevel::FiniteField);
    EXPECT_NE(graph::programToText(s.program).find("rotate_pairs(X, dim=2)"), std::string::npos)
        << graph::programToText(s.program);
    for (const char* op : {"Slice", "Neg", "Concat", "Reshape"}) {
      EXPECT_TRUE(std::count(s.ops.begin(), s.ops.end(), op)) << op << " not in the subgraph";
    }
  }
}

TEST(RopeMapping, NearMissesOfTheInterleavedRotationStayWithTheFramework) {
  for (const Pairs form : {Pairs::EvenFirst, Pairs::OddSliceReadElsewhere}) {
    SCOPED_TRACE(form == Pairs::EvenFirst ? "even lanes first" : "a slice read elsewhere");
    const ImportedModel m = partitionModel(interleavedRope(form).model());
    bool concatLeft = false;
    for (const LeftOut& u : m.unsupported) {
      if (u.op == "Concat") {
        concatLeft = true;
        EXPECT_NE(u.reason.find("no mapping"), std::string::npos) << u.reason;
      }
    }
    EXPECT_TRUE(concatLeft);
    for (const Subgraph& s : m.subgraphs) {
      EXPECT_EQ(graph::programToText(s.program).find("rotate_pairs"), std::string::npos)
          << graph::programToText(s.program);
    }
  }
}

// GPT-J rotates q and k before its head transpose: rotate_pairs acts along the last axis alone
// (its stacked values only append an axis), so the transpose joins and the whole subgraph is
// computed in the head order, X, cos and sin read heads_transposed.
TEST(HeadsPushdown, AHeadTransposeAfterInterleavedRopeJoinsItsSubgraph) {
  const ImportedModel m = partitionModel(interleavedRope(Pairs::BeforeHeadTranspose).model());
  ASSERT_EQ(m.subgraphs.size(), 1u);
  EXPECT_TRUE(m.unsupported.empty()) << m.unsupported[0].node << ": " << m.unsupported[0].reason;
  const Subgraph& s = m.subgraphs[0];
  EXPECT_TRUE(std::count(s.ops.begin(), s.ops.end(), "Transpose"));
  for (const BoundInput& i : s.inputs) {
    EXPECT_EQ(i.layout, graph::Layout::HeadsTransposed) << i.value;
  }
  const graph::Program expected = graph::parseProgramText(
      "program p\ninput X f16 [4, 16, 32] layout=heads_transposed\n"
      "input cos f16 [1, 16, 32] layout=heads_transposed\n"
      "input sin f16 [1, 16, 32] layout=heads_transposed\n"
      "E = exp(add(mul(X, cos), mul(rotate_pairs(X, dim=2), sin)))\noutput E\n",
      "expected.mg");
  const verify::EquivalenceReport report = verify::checkEquivalence(s.program, expected, {});
  EXPECT_TRUE(report.equivalent) << report.mismatch << "\n" << graph::programToText(s.program);
  EXPECT_EQ(report.level, verify::VerificationLevel::FiniteField);
}

// Y = transpose(f(X)) · C, X [1, 16, 4, 32], the transpose [0, 2, 1, 3]: f an Exp, which acts
// along the last axis (the transpose joins, X is read heads_transposed), or a MatMul by W per s,
// which the pushdown does not take (the transpose stays a view between two subgraphs).
Records transposeOf(const std::string& f) {
  Records r;
  r.tensor("X", {1, 16, 4, 32}, true);
  r.tensor("W", {1, 16, 32, 32}, true);  // a batched matmul over s, mixing the heads' rows
  r.tensor("C", {16, 32}, true);
  r.node(f, f == "MatMul" ? std::vector<std::string>{"X", "W"} : std::vector<std::string>{"X"}, "f",
         {1, 16, 4, 32});
  r.node("Transpose", {"f"}, "t", {1, 4, 16, 32}).attributes["perm"].ints = {0, 2, 1, 3};
  r.node("Mul", {"t", "C"}, "Y", {1, 4, 16, 32});
  r.output("Y");
  return r;
}

TEST(HeadsPushdown, ATransposeOfAValueComputedAlongTheLastAxisJoinsItsSubgraph) {
  const ImportedModel m = partitionModel(transposeOf("Exp").model());
  ASSERT_EQ(m.subgraphs.size(), 1u);
  EXPECT_TRUE(m.unsupported.empty());
  const Subgraph& s = m.subgraphs[0];
  EXPECT_TRUE(std::count(s.ops.begin(), s.ops.end(), "Transpose"));
  ASSERT_EQ(s.inputs[0].value, "X");
  EXPECT_EQ(s.inputs[0].layout, graph::Layout::HeadsTransposed);
  const graph::Program expected = graph::parseProgramText(
      "program p\ninput X f16 [4, 16, 32] layout=heads_transposed\ninput C f16 [1, 16, 32]\n"
      "Y = mul(exp(X), C)\noutput Y\n",
      "expected.mg");
  const verify::EquivalenceReport report = verify::checkEquivalence(s.program, expected, {});
  EXPECT_TRUE(report.equivalent) << report.mismatch << "\n" << graph::programToText(s.program);
}

TEST(HeadsPushdown, ATransposeOfAMatmulStaysAViewBetweenTwoSubgraphs) {
  const ImportedModel m = partitionModel(transposeOf("MatMul").model());
  ASSERT_EQ(m.subgraphs.size(), 2u);
  EXPECT_TRUE(m.unsupported.empty());
  const Subgraph& reader = m.subgraphs[1];
  EXPECT_TRUE(std::count(reader.ops.begin(), reader.ops.end(), "Transpose"));
  ASSERT_EQ(reader.inputs[0].value, "t");
  EXPECT_EQ(reader.inputs[0].buffer, "f");
  EXPECT_EQ(reader.inputs[0].layout, graph::Layout::HeadsTransposed);
}

}  // namespace
}  // namespace mugraph::onnx_import
