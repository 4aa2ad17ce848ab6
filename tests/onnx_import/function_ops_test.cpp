// ONNX's function ops (LayerNormalization, Gelu) written out as their bodies
// (onnx_import/function_ops.h): each imported program checked against the formula written by
// hand (finite field), the subgraph listing the nodes of the file, and a body that cannot be
// written out left to the framework with its reason.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdio>
#include <numbers>

#include "graph/program_text.h"
#include "onnx_import/expect_computes.h"
#include "onnx_import/import_model.h"
#include "onnx_import/onnx_graph.h"
#include "verify/equivalence.h"

namespace mugraph::onnx_import {
namespace {

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", v);
  return text;
}

void stringAttr(onnx::NodeProto* n, const std::string& key, const std::string& value) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(key);
  a->set_type(onnx::AttributeProto_AttributeType_STRING);
  a->set_s(value);
}

// GPT-2's block entry: LayerNorm, a projection, GELU; one subgraph.
OnnxGraph layerNormMatmulGelu(const std::string& approximate) {
  OnnxGraph g;
  g.input("X", {16, 64});
  g.input("S", {64});
  g.input("B", {64});
  g.input("W", {64, 32});
  g.output("Y", {16, 32});
  onnx::NodeProto* norm = g.node("LayerNormalization", {"X", "S", "B"}, "N");
  OnnxGraph::attr(norm, "axis", int64_t{-1});
  OnnxGraph::attr(norm, "epsilon", 1e-5f);
  g.node("MatMul", {"N", "W"}, "H");
  onnx::NodeProto* gelu = g.node("Gelu", {"H"}, "Y");
  if (!approximate.empty()) stringAttr(gelu, "approximate", approximate);
  return g;
}

const std::string kNormalized =
    "input X f16 [16, 64]\ninput S f16 [1, 64]\ninput B f16 [1, 64]\ninput W f16 [64, 32]\n"
    "M = scale(reduce_sum(X, dim=1), c=0.015625)\n"
    "D = sub(X, M)\n"
    "V = scale(reduce_sum(square(D), dim=1), c=0.015625)\n"
    "L = add(mul(div(D, sqrt(add_scalar(V, c=" + number(double(1e-5f)) + "))), S), B)\n"
    "H = matmul(L, W)\n";

TEST(FunctionOps, LayerNormMatmulAndExactGeluAreOneSubgraph) {
  const ImportedModel m = layerNormMatmulGelu("").import("ln_gelu");
  ASSERT_EQ(m.subgraphs.size(), 1u);
  EXPECT_TRUE(m.unsupported.empty());
  // The file's nodes, not the parts of their bodies.
  EXPECT_EQ(m.subgraphs[0].nodes, (std::vector<std::string>{"LayerNormalization_N", "MatMul_H",
                                                            "Gelu_Y"}));
  EXPECT_EQ(m.subgraphs[0].ops, (std::vector<std::string>{"LayerNormalization", "MatMul", "Gelu"}));
  EXPECT_EQ(m.subgraphs[0].name, "LayerNormalization_N-Gelu_Y");
  expectComputes(m.subgraphs[0].program,
                 kNormalized + "Y = mul(scale(H, c=0.5), add_scalar(erf(scale(H, c=" +
                     number(1.0 / std::numbers::sqrt2) + ")), c=1))\noutput Y\n");
}

TEST(FunctionOps, TanhGeluIsTheCubicInsideTanh) {
  const ImportedModel m = layerNormMatmulGelu("tanh").import("ln_gelu_tanh");
  ASSERT_EQ(m.subgraphs.size(), 1u);
  expectComputes(m.subgraphs[0].program,
                 kNormalized + "I = scale(add(H, scale(mul(H, square(H)), c=0.044715)), c=" +
                     number(std::sqrt(2.0 / std::numbers::pi)) +
                     ")\nY = mul(scale(H, c=0.5), add_scalar(tanh(I), c=1))\noutput Y\n");
}

TEST(FunctionOps, LayerNormWithoutScaleOrBiasAndACubeOfPow) {
  OnnxGraph g;
  g.input("X", {8, 32});
  g.scalar("three", 3.0f);
  g.output("Y", {8, 32});
  g.node("LayerNormalization", {"X"}, "N");
  g.node("Pow", {"N", "three"}, "Y");
  const ImportedModel m = g.import("ln_plain_cube");
  ASSERT_EQ(m.subgraphs.size(), 1u);
  EXPECT_TRUE(m.unsupported.empty());
  expectComputes(m.subgraphs[0].program,
                 "input X f16 [8, 32]\nM = scale(reduce_sum(X, dim=1), c=0.03125)\nD = sub(X, M)\n"
                 "V = scale(reduce_sum(square(D), dim=1), c=0.03125)\n"
                 "N = div(D, sqrt(add_scalar(V, c=" + number(1e-5) + ")))\n"
                 "Y = mul(N, square(N))\noutput Y\n");
}

TEST(FunctionOps, AGeluOfAnUnknownApproximationIsLeftOutWithItsReason) {
  OnnxGraph g;
  g.input("X", {8, 32});
  g.output("Y", {8, 32});
  g.output("Z", {8, 32});
  g.node("Exp", {"X"}, "Z");
  stringAttr(g.node("Gelu", {"X"}, "Y"), "approximate", "sigmoid");
  const ImportedModel m = g.import("gelu_unknown");
  ASSERT_EQ(m.subgraphs.size(), 1u);
  ASSERT_EQ(m.unsupported.size(), 1u);
  EXPECT_EQ(m.unsupported[0].node, "Gelu_Y");
  EXPECT_NE(m.unsupported[0].reason.find("Gelu"), std::string::npos) << m.unsupported[0].reason;
}

}  // namespace
}  // namespace mugraph::onnx_import
