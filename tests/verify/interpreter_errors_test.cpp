// The interpreter's contract with bad input: missing or mis-shaped inputs and graphs that
// would fail validation are UserErrors that name the problem, never a crash. Graphs are
// judged by graph validation itself, so the messages (and JSON paths) are validation's.
#include <gtest/gtest.h>

#include "graph/error.h"
#include "tests/verify/test_support.h"
#include "verify/interpreter.h"
#include "verify/random_inputs.h"

namespace mugraph::verify {
namespace {

using graph::DType;
using graph::GraphBuilder;
using graph::OpKind;
using graph::TensorId;
using testing::kNone;

// Expects a UserError whose message contains every one of `fragments`.
template <class Call>
void expectUserError(Call call, const std::vector<std::string>& fragments) {
  try {
    call();
    ADD_FAILURE() << "no UserError thrown";
  } catch (const UserError& e) {
    for (const std::string& fragment : fragments) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos)
          << "'" << e.what() << "' lacks '" << fragment << "'";
    }
  }
}

graph::Program expProgram() {
  return testing::oneOpProgram(OpKind::Exp, {{2, 3}});
}

TEST(InterpreterErrors, MissingInputNamesTheTensor) {
  expectUserError([] { evaluate(expProgram(), TensorMap<double>{}); },
                  {"'a'", "missing", "[2, 3]"});
}

TEST(InterpreterErrors, WrongInputShapeNamesBothShapes) {
  const TensorMap<double> inputs{{"a", {{3, 2}, std::vector<double>(6, 0.5)}}};
  expectUserError([&] { evaluate(expProgram(), inputs); }, {"'a'", "[3, 2]", "[2, 3]"});
}

TEST(InterpreterErrors, InputWithTooFewValues) {
  const TensorMap<double> inputs{{"a", {{2, 3}, std::vector<double>(5, 0.5)}}};
  expectUserError([&] { evaluate(expProgram(), inputs); }, {"'a'", "5 values"});
}

TEST(InterpreterErrors, ApplyOpRejectsOperandsThatDoNotFit) {
  const HostTensor<double> a{{2, 3}, std::vector<double>(6, 0.5)};
  const HostTensor<double> b{{2, 3}, std::vector<double>(6, 0.25)};
  expectUserError([&] { applyOp<double>(OpKind::Matmul, {}, {&a, &b}); }, {"matmul"});
  expectUserError([&] { applyOp<double>(OpKind::Exp, {}, {&a, &b}); }, {"exp", "operand"});
  expectUserError([&] { applyOp<double>(OpKind::AccumSum, {}, {&a}); }, {"accum_sum"});
}

// A valid kernel: X [4, 8], grid x over rows, forloop 2 over columns, accum_sum, output.
graph::KernelGraph accumulatingKernel() {
  GraphBuilder builder("kernel");
  const TensorId x = builder.input("X", DType::F32, {4, 8});
  graph::BlockGraphBuilder block({2, 1, 1}, 128, 2, {builder.desc(x)});
  const TensorId tile = block.input(0, {0, kNone, kNone}, 1, "x");
  block.output(block.op(OpKind::AccumSum, {tile}, {}, "acc"), {0, kNone, kNone});
  builder.output(builder.blockGraph("k", block.block(), {x}, {{"Y", DType::F32}})[0]);
  return builder.finish();
}

void expectInvalidKernel(graph::KernelGraph graph, const std::vector<std::string>& fragments) {
  const TensorMap<double> inputs = randomInputs(graph, testing::freshSeed());
  expectUserError([&] { evaluate(graph, inputs); }, fragments);
}

TEST(InterpreterErrors, UnvalidatedBlockGraphsFailCleanly) {
  const graph::KernelGraph valid = accumulatingKernel();
  EXPECT_NO_THROW(evaluate(valid, randomInputs(valid, testing::freshSeed())));

  graph::KernelGraph badGrid = valid;
  badGrid.ops[0].block->grid[0] = 3;
  expectInvalidKernel(badGrid, {"grid.x=3", "'X'"});

  graph::KernelGraph badForloop = valid;
  badForloop.ops[0].block->forloop = 0;
  expectInvalidKernel(badForloop, {"forloop"});

  graph::KernelGraph perIterationOutput = valid;
  perIterationOutput.ops[0].block->ops[2].inputs = {0};
  expectInvalidKernel(perIterationOutput, {"per-iteration"});

  graph::KernelGraph danglingTile = valid;
  danglingTile.ops[0].block->ops[1].inputs = {7};
  expectInvalidKernel(danglingTile, {"$.kernels[0].ops[1].inputs[0]", "before it is defined"});

  graph::KernelGraph wrongTileShape = valid;
  wrongTileShape.ops[0].block->tensors[0].shape = {2, 8};
  expectInvalidKernel(wrongTileShape, {"[2, 4]", "[2, 8]"});

  graph::KernelGraph wrongOutputShape = valid;
  wrongOutputShape.tensors[1].shape = {4, 8};
  expectInvalidKernel(wrongOutputShape, {"'Y'", "[4, 4]"});

  graph::KernelGraph unwritten = valid;
  unwritten.ops[0].block->ops.pop_back();
  expectInvalidKernel(unwritten, {"'Y'", "never written"});

  graph::KernelGraph missingBlock = valid;
  missingBlock.ops[0].block.reset();
  expectInvalidKernel(missingBlock, {"no block graph"});
}

TEST(InterpreterErrors, UnvalidatedProgramsFailCleanly) {
  graph::Program wrongDeclaredShape = expProgram();
  wrongDeclaredShape.tensors[1].shape = {3, 2};
  expectInvalidKernel(wrongDeclaredShape, {"'out'", "[2, 3]"});

  graph::Program forwardReference = expProgram();
  forwardReference.ops[0].inputs = {1};
  expectInvalidKernel(forwardReference, {"$.ops[0].inputs[0]", "before it is defined"});

  graph::Program undefinedOutput = expProgram();
  undefinedOutput.outputs = {5};
  expectInvalidKernel(undefinedOutput, {"output"});
}

}  // namespace
}  // namespace mugraph::verify
