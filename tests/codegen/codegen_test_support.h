// Helpers shared by the code generation tests: the shipped schedules, one-op programs of every
// predefined op in several shapes, dtypes and layouts, and a cache so that each schedule is
// compiled by NVRTC once per test binary (compiles take about a second each).
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "codegen/generate.h"
#include "graph/builder.h"
#include "graph/files.h"
#include "graph/validate.h"
#include "plan/lower_predefined_ops.h"
#include "plan/schedule_plan.h"
#include "shipped_schedules.h"

namespace mugraph::codegen::testing {

// The target the tests plan for, and the plan-layer entry points bound to it.
inline const plan::Target& testTarget() {
  return plan::targetByName(plan::kDefaultTarget);
}
inline graph::Schedule lowerProgram(const graph::Program& program) {
  return plan::lowerProgram(program, testTarget());
}
inline graph::Schedule lowerPredefinedOps(const graph::Schedule& schedule) {
  return plan::lowerPredefinedOps(schedule, testTarget());
}
inline EmittedSource emitSchedule(const graph::Schedule& schedule) {
  return codegen::emitSchedule(plan::planSchedule(schedule, testTarget()));
}
// The CPU emulation models sm_80's primitives (cp.async, ldmatrix, mma.sync), not the sm_90
// warpgroup path's asynchronous proxies and mbarriers (GPU tests cover those): emulated
// kernels are planned for the test target with that path switched off.
inline const plan::Target& emulationTarget() {
  static const plan::Target target = [] {
    plan::Target t = testTarget();
    t.warpgroupMma = false;
    return t;
  }();
  return target;
}
inline EmittedSource emitForEmulation(const graph::Schedule& schedule) {
  return codegen::emitSchedule(plan::planSchedule(schedule, emulationTarget()));
}

// Full paths of the schedules schedules/shipped.txt lists.
inline std::vector<std::string> shippedSchedulePaths() {
  std::vector<std::string> paths;
  for (const mugraph::testing::ShippedSchedule& s : mugraph::testing::shippedSchedules()) {
    paths.push_back(mugraph::testing::shippedSchedulesFolder() + "/" + s.file);
  }
  return paths;
}

// generateCode once per schedule path (or name) and target, shared by every test of the
// binary.
inline const GeneratedCode& compiledOnce(const std::string& key,
                                         const std::function<graph::Schedule()>& make,
                                         const std::vector<int>& archs = {
                                             testTarget().computeCapability}) {
  static std::map<std::string, std::unique_ptr<GeneratedCode>> cache;
  std::string slotKey = key;
  for (int arch : archs) slotKey += "@" + std::to_string(arch);
  auto& slot = cache[slotKey];
  if (!slot) slot = std::make_unique<GeneratedCode>(generateCode(make(), GenerateOptions{archs}));
  return *slot;
}

inline const GeneratedCode& compiledShipped(const std::string& path,
                                            int arch = testTarget().computeCapability) {
  return compiledOnce(path, [&] { return graph::loadSchedule(path); }, {arch});
}

struct OneOpCase {
  std::string name;
  graph::Program program;
};

inline graph::Program oneOp(const std::string& name, graph::OpKind kind,
                            const std::vector<graph::TensorDesc>& inputs,
                            graph::OpAttrs attrs = {}) {
  graph::GraphBuilder builder(name);
  std::vector<graph::TensorId> operands;
  for (const graph::TensorDesc& in : inputs) {
    operands.push_back(builder.input(in.name, in.dtype, in.shape, in.layout));
  }
  builder.output(builder.op(kind, operands, attrs, "out"));
  return builder.finish();
}

// sqrt(square(x)): random inputs are signed, and sqrt of a negative is NaN in both.
inline graph::Program sqrtOfSquare(const graph::TensorDesc& input) {
  graph::GraphBuilder builder("sqrt_f32");
  const graph::TensorId x = builder.input(input.name, input.dtype, input.shape, input.layout);
  builder.output(
      builder.op(graph::OpKind::Sqrt, {builder.op(graph::OpKind::Square, {x})}, {}, "out"));
  return builder.finish();
}

// Every predefined op, in shapes that exercise the tensor-core path and the general path,
// f16, bf16 and f32, broadcasting and a transposed-layout operand.
inline std::vector<OneOpCase> oneOpCases() {
  using graph::DType;
  using graph::Layout;
  using graph::OpKind;
  const auto t = [](const char* name, DType dtype, graph::Dims shape,
                    Layout layout = Layout::RowMajor) {
    return graph::TensorDesc{name, dtype, std::move(shape), layout};
  };
  graph::OpAttrs dim1;
  dim1.dim = 1;
  graph::OpAttrs dim2;
  dim2.dim = 2;
  graph::OpAttrs dim0;
  dim0.dim = 0;
  graph::OpAttrs sumTo4;
  sumTo4.dim = 1;
  sumTo4.to = 4;
  graph::OpAttrs scale;
  scale.scale = 0.125;
  graph::OpAttrs shift;
  shift.scale = -0.75;
  std::vector<OneOpCase> cases = {
      {"matmul_f16_256", oneOp("matmul_f16_256", OpKind::Matmul,
                               {t("a", DType::F16, {256, 128}), t("b", DType::F16, {128, 256})})},
      {"matmul_bf16_batched",
       oneOp("matmul_bf16_batched", OpKind::Matmul,
             {t("a", DType::BF16, {4, 64, 96}), t("b", DType::BF16, {4, 96, 32})})},
      {"matmul_f16_transposed_b", oneOp("matmul_f16_transposed_b", OpKind::Matmul,
                                        {t("a", DType::F16, {2, 64, 64}),
                                         t("b", DType::F16, {2, 64, 128}, Layout::Transposed)})},
      {"matmul_f16_transposed_a",
       oneOp("matmul_f16_transposed_a", OpKind::Matmul,
             {t("a", DType::F16, {64, 32}, Layout::Transposed), t("b", DType::F16, {32, 48})})},
      {"matmul_f32_odd", oneOp("matmul_f32_odd", OpKind::Matmul,
                               {t("a", DType::F32, {3, 5, 7}), t("b", DType::F32, {3, 7, 9})})},
      {"matmul_f16_rank4",
       oneOp("matmul_f16_rank4", OpKind::Matmul,
             {t("a", DType::F16, {2, 3, 16, 32}), t("b", DType::F16, {2, 3, 32, 16})})},
      {"exp_f16", oneOp("exp_f16", OpKind::Exp, {t("x", DType::F16, {64, 256})})},
      {"square_bf16", oneOp("square_bf16", OpKind::Square, {t("x", DType::BF16, {3, 40, 50})})},
      {"sqrt_f32", sqrtOfSquare(t("x", DType::F32, {1000}))},
      {"silu_f16", oneOp("silu_f16", OpKind::Silu, {t("x", DType::F16, {2, 3, 4, 5})})},
      {"sigmoid_f16", oneOp("sigmoid_f16", OpKind::Sigmoid, {t("x", DType::F16, {64, 256})})},
      {"tanh_f16", oneOp("tanh_f16", OpKind::Tanh, {t("x", DType::F16, {64, 256})})},
      {"erf_bf16", oneOp("erf_bf16", OpKind::Erf, {t("x", DType::BF16, {3, 40, 50})})},
      {"relu_f16", oneOp("relu_f16", OpKind::Relu, {t("x", DType::F16, {64, 256})})},
      {"scale_f32", oneOp("scale_f32", OpKind::Scale, {t("x", DType::F32, {128, 64})}, scale)},
      {"add_scalar_bf16",
       oneOp("add_scalar_bf16", OpKind::AddScalar, {t("x", DType::BF16, {3, 40, 50})}, shift)},
      {"add_broadcast_f16",
       oneOp("add_broadcast_f16", OpKind::Add,
             {t("a", DType::F16, {8, 64, 64}), t("b", DType::F16, {1, 64, 1})})},
      {"sub_f32",
       oneOp("sub_f32", OpKind::Sub, {t("a", DType::F32, {33, 17}), t("b", DType::F32, {33, 17})})},
      {"mul_bf16_broadcast",
       oneOp("mul_bf16_broadcast", OpKind::Mul,
             {t("a", DType::BF16, {1, 128}), t("b", DType::BF16, {96, 128})})},
      {"div_transposed",
       oneOp("div_transposed", OpKind::Div,
             {t("a", DType::F16, {32, 48}, Layout::Transposed), t("b", DType::F16, {32, 48})})},
      {"mul_heads_transposed", oneOp("mul_heads_transposed", OpKind::Mul,
                                     {t("a", DType::F16, {4, 16, 32}, Layout::HeadsTransposed),
                                      t("b", DType::F16, {1, 16, 32})})},
      {"matmul_heads_transposed",
       oneOp("matmul_heads_transposed", OpKind::Matmul,
             {t("q", DType::F16, {4, 16, 32}, Layout::HeadsTransposed),
              t("k", DType::F16, {4, 32, 16}, Layout::HeadsTransposed)})},
      {"reduce_sum_f16",
       oneOp("reduce_sum_f16", OpKind::ReduceSum, {t("x", DType::F16, {4, 64, 4096})}, dim2)},
      {"reduce_sum_to_f32",
       oneOp("reduce_sum_to_f32", OpKind::ReduceSum, {t("x", DType::F32, {6, 64, 10})}, sumTo4)},
      {"reduce_sum_dim0_bf16",
       oneOp("reduce_sum_dim0_bf16", OpKind::ReduceSum, {t("x", DType::BF16, {4096, 24})}, dim0)},
      {"reduce_max_f16",
       oneOp("reduce_max_f16", OpKind::ReduceMax, {t("x", DType::F16, {16, 8192})}, dim1)},
      {"reduce_max_f32_middle",
       oneOp("reduce_max_f32_middle", OpKind::ReduceMax, {t("x", DType::F32, {5, 7, 3})}, dim1)},
      {"rms_norm_f16",
       oneOp("rms_norm_f16", OpKind::RmsNorm, {t("x", DType::F16, {64, 1024})}, dim1)},
      {"rms_norm_bf16_dim0",
       oneOp("rms_norm_bf16_dim0", OpKind::RmsNorm, {t("x", DType::BF16, {48, 20})}, dim0)},
      {"rotate_half_f16",
       oneOp("rotate_half_f16", OpKind::RotateHalf, {t("x", DType::F16, {4, 16, 64})}, dim2)},
      {"rotate_half_bf16_middle", oneOp("rotate_half_bf16_middle", OpKind::RotateHalf,
                                        {t("x", DType::BF16, {6, 32, 5})}, dim1)},
      {"rotate_pairs_f16",
       oneOp("rotate_pairs_f16", OpKind::RotatePairs, {t("x", DType::F16, {4, 16, 64})}, dim2)},
      {"rotate_pairs_bf16_middle", oneOp("rotate_pairs_bf16_middle", OpKind::RotatePairs,
                                         {t("x", DType::BF16, {6, 32, 5})}, dim1)},
  };
  return cases;
}

// Side by side in one graph (names prefixed), so that one compile covers every case.
inline void appendGraph(const graph::KernelGraph& from, const std::string& prefix,
                        graph::KernelGraph& into) {
  const int base = static_cast<int>(into.tensors.size());
  for (graph::TensorDesc desc : from.tensors) {
    desc.name = prefix + desc.name;
    into.tensors.push_back(desc);
  }
  for (graph::TensorId t : from.inputs) into.inputs.push_back(base + t);
  for (graph::TensorId t : from.outputs) into.outputs.push_back(base + t);
  for (graph::KernelOp op : from.ops) {
    for (graph::TensorId& t : op.inputs) t += base;
    for (graph::TensorId& t : op.outputs) t += base;
    if (!op.name.empty()) op.name = prefix + op.name;
    into.ops.push_back(op);
  }
}

// Every one-op case lowered to its default schedule, all in one schedule.
inline graph::Schedule allOneOpCasesLowered() {
  graph::Schedule merged;
  merged.name = "one_op_cases";
  merged.program.name = "one_op_cases";
  merged.graph.name = "one_op_cases";
  for (const OneOpCase& c : oneOpCases()) {
    appendGraph(c.program, c.name + "_", merged.program);
    appendGraph(lowerProgram(c.program).graph, c.name + "_", merged.graph);
  }
  graph::validateSchedule(merged);
  return merged;
}

// For every target at once: the default tiles are small enough to plan alike on each, so one
// kernel.cu serves them all.
inline const GeneratedCode& allOneOpCasesCompiled() {
  static const GeneratedCode code = generateCode(allOneOpCasesLowered(), GenerateOptions{{80, 90}});
  return code;
}

inline std::filesystem::path scratchFolder(const std::string& test) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("mugraph_codegen_test_" + std::to_string(::getpid()) + "_" + test);
  std::filesystem::create_directories(path);
  return path;
}

}  // namespace mugraph::codegen::testing
