// Round trips through every file format over many seeded random graphs: what a writer
// produces reads back as the identical IR (operator==) with the same canonical hash. Fresh
// seeds run alongside fixed ones; a failure prints its seed so it can be replayed.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <set>

#include "graph/error.h"
#include "graph/hash.h"
#include "graph/json_format.h"
#include "graph/program_text.h"
#include "random_graphs.h"

namespace mugraph::graph {
namespace {

constexpr int kFixedSeeds = 250;
constexpr int kFreshSeeds = 60;

// Runs `check` with the seed in every message, including exceptions the check lets escape.
void withSeed(uint64_t seed, const std::function<void(testing::RandomGraphs&)>& check) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  testing::RandomGraphs random(seed);
  try {
    check(random);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "seed " << seed << " threw: " << e.what();
  }
}

void checkProgram(const Program& program) {
  const std::string jsonText = programToJson(program).dump(2);
  const Program fromJson = programFromJson(nlohmann::json::parse(jsonText), "rt.json");
  EXPECT_TRUE(fromJson == program) << jsonText;
  EXPECT_EQ(programHash(fromJson), programHash(program));

  const std::string text = programToText(program);
  const Program fromText = parseProgramText(text, "rt.mg");
  EXPECT_TRUE(fromText == program) << text;
  EXPECT_EQ(programToText(fromText), text);
  EXPECT_EQ(programHash(fromText), programHash(program));
}

void checkSchedule(const Schedule& schedule) {
  const std::string jsonText = scheduleToJson(schedule).dump(2);
  const Schedule fromJson = scheduleFromJson(nlohmann::json::parse(jsonText), "rt.json");
  EXPECT_TRUE(fromJson == schedule) << jsonText;
  EXPECT_EQ(scheduleHash(fromJson), scheduleHash(schedule));
  EXPECT_EQ(scheduleToJson(fromJson).dump(2), jsonText);
}

TEST(RoundTrip, RandomProgramsFixedSeeds) {
  for (uint64_t seed = 0; seed < kFixedSeeds; ++seed) {
    withSeed(seed, [](testing::RandomGraphs& random) { checkProgram(random.program()); });
  }
}

TEST(RoundTrip, RandomSchedulesFixedSeeds) {
  for (uint64_t seed = 0; seed < kFixedSeeds; ++seed) {
    withSeed(seed + 100000, [](testing::RandomGraphs& random) {
      const Schedule schedule = random.schedule();
      checkProgram(schedule.program);
      checkSchedule(schedule);
    });
  }
}

TEST(RoundTrip, RandomGraphsFreshSeeds) {
  std::random_device device;
  for (int i = 0; i < kFreshSeeds; ++i) {
    const uint64_t seed = (uint64_t{device()} << 32) | device();
    withSeed(seed, [](testing::RandomGraphs& random) {
      checkProgram(random.program());
      checkSchedule(random.schedule());
    });
  }
}

// The generator is only useful if it reaches every feature the formats can express.
TEST(RoundTrip, GeneratorCoversTheFormats) {
  std::set<OpKind> programOps, blockOps;
  std::set<std::string> features;
  for (uint64_t seed = 0; seed < kFixedSeeds; ++seed) {
    testing::RandomGraphs random(seed + 100000);
    const Schedule schedule = random.schedule();
    for (const KernelOp& op : schedule.program.ops) programOps.insert(op.kind);
    for (TensorId t : schedule.program.inputs) {
      const TensorDesc& d = schedule.program.tensors[t];
      if (d.layout == Layout::Transposed) features.insert("transposed input");
      if (d.layout == Layout::HeadsTransposed) features.insert("heads_transposed input");
      features.insert("rank " + std::to_string(d.shape.size()));
    }
    for (TensorId t : schedule.program.outputs) {
      if (schedule.program.tensors[t].layout == Layout::HeadsTransposed) {
        features.insert("heads_transposed output");
      }
    }
    for (const KernelOp& kernel : schedule.graph.ops) {
      if (!kernel.block) {
        features.insert("predefined kernel");
        continue;
      }
      const BlockGraph& block = *kernel.block;
      if (block.forloop > 1) features.insert("forloop");
      if (!block.fusion.empty()) features.insert("fusion");
      if (kernel.outputs.size() > 1) features.insert("several outputs");
      for (int a = 0; a < kGridAxes; ++a) {
        if (block.grid[a] > 1) features.insert(std::string("grid.") + gridAxisName(a));
      }
      for (const BlockOp& op : block.ops) {
        blockOps.insert(op.kind);
        if (op.kind == OpKind::Input && op.fmap >= 0) features.insert("fmap");
        for (int a = 0; a < kGridAxes; ++a) {
          if (op.kind == OpKind::Input && block.grid[a] > 1 && op.imap[a] == kReplicated) {
            features.insert("replicated imap");
          }
        }
      }
    }
  }
  for (const OpInfo& info : allOps()) {
    EXPECT_TRUE(!isPredefinedOp(info.kind) || programOps.count(info.kind)) << info.name;
    EXPECT_TRUE(!info.blockLevel || blockOps.count(info.kind)) << info.name;
  }
  for (const char* feature :
       {"transposed input", "heads_transposed input", "heads_transposed output", "rank 1", "rank 2",
        "rank 3", "rank 4", "predefined kernel", "forloop", "fusion", "several outputs", "grid.x",
        "grid.y", "grid.z", "fmap", "replicated imap"}) {
    EXPECT_TRUE(features.count(feature)) << feature;
  }
}

TEST(RoundTrip, DoublesKeepEveryBit) {
  for (double c :
       {0.1, 1.0 / 3.0, -0.0, 1e-300, 6.02214076e23, 4.9e-324, -1.7976931348623157e308}) {
    GraphBuilder builder("p");
    const TensorId x = builder.input("x", DType::F32, {4});
    OpAttrs attrs;
    attrs.scale = c;
    builder.output(builder.op(OpKind::Scale, {x}, attrs, "y"));
    const Program program = builder.finish();
    checkProgram(program);
    const Program back = parseProgramText(programToText(program), "c.mg");
    EXPECT_EQ(std::signbit(back.ops[0].attrs.scale), std::signbit(c));
  }
}

// RMSNorm with epsilon and a sigmoid gate, as the ONNX importer writes them: every c reads back
// as the same double through the text and JSON formats, and the text prints it as written.
TEST(RoundTrip, SigmoidAndAddScalarKeepTheirConstantsExactly) {
  const std::string text =
      "program rmsnorm_eps\n"
      "input X f16 [16, 256]\n"
      "input W f16 [1, 256]\n"
      "R = sqrt(add_scalar(scale(reduce_sum(square(X), dim=1), c=0.00390625), c=1e-06))\n"
      "G = add_scalar(sigmoid(X), c=1e-05)\n"
      "Y = mul(mul(div(X, R), W), G)\n"
      "output Y\n";
  const Program program = parseProgramText(text, "rmsnorm_eps.mg");
  std::vector<double> constants;
  for (const KernelOp& op : program.ops) {
    if (op.kind == OpKind::AddScalar) constants.push_back(op.attrs.scale);
  }
  EXPECT_EQ(constants, (std::vector<double>{1e-06, 1e-05}));
  EXPECT_NE(programToText(program).find("t3 = add_scalar(t2, c=1e-06)"), std::string::npos)
      << programToText(program);
  EXPECT_NE(programToText(program).find("sigmoid(X)"), std::string::npos);
  checkProgram(program);
  // c is part of the program's meaning: another epsilon is another program.
  std::string otherEpsilon = text;
  otherEpsilon.replace(otherEpsilon.find("c=1e-06"), 7, "c=1e-07");
  EXPECT_NE(programHash(parseProgramText(otherEpsilon, "other.mg")), programHash(program));
}

TEST(RoundTrip, NestedCallsGetFreshNamesThatAvoidDeclaredOnes) {
  const Program program = parseProgramText(
      "input t0 f32 [4, 8]\n"
      "S = reduce_sum(exp(scale(t0, c=2)), dim=1)\n"
      "t1 = exp(S)\n"
      "output t1\n",
      "nested.mg");
  ASSERT_EQ(program.ops.size(), 4u);
  EXPECT_EQ(program.tensors[program.ops[0].outputs[0]].name, "t2");
  EXPECT_EQ(program.tensors[program.ops[1].outputs[0]].name, "t3");
  EXPECT_TRUE(parseProgramText(programToText(program), "again.mg") == program);
}

}  // namespace
}  // namespace mugraph::graph
