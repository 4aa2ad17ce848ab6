// Scaled twins (verify/scaled_twin.h, verify/README.md "Scaled twins"): which dims shrink and
// which stay whole, and, on random schedules and mutants of them, the twin's verdict is the
// verdict at the real shapes.
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <random>
#include <typeinfo>

#include "graph/error.h"
#include "graph/files.h"
#include "graph/random_graphs.h"
#include "graph/validate.h"
#include "verify/equivalence.h"
#include "verify/scaled_twin.h"
#include "verify/test_support.h"

namespace mugraph::verify {
namespace {

graph::Schedule shipped(const std::string& name) {
  return graph::loadSchedule(std::string(MUGRAPH_SOURCE_DIR) + "/schedules/" + name);
}

const graph::TensorDesc& tensor(const graph::KernelGraph& g, const std::string& name) {
  return g.tensors.at(*g.findTensor(name));
}

TEST(ScaledTwin, GemmShrinksRowsAndColumnsAndKeepsTheContraction) {
  const graph::Schedule s = shipped("gemm_4096.warpgroups.json");
  const std::optional<ScaledTwin> twin = scaledTwin(s.program, s.graph);
  ASSERT_TRUE(twin);
  // Rows in parts of 128 and columns in parts of 256: two parts of each, K whole.
  EXPECT_EQ(tensor(twin->reference, "A").shape, (graph::Dims{256, 4096}));
  EXPECT_EQ(tensor(twin->reference, "B").shape, (graph::Dims{4096, 512}));
  EXPECT_EQ(tensor(twin->candidate, "C").shape, (graph::Dims{256, 512}));
  EXPECT_GT(twin->workRatio, 50.0);
  EquivalenceOptions options;
  options.seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(options.seed));
  options.floatScales = {0.5};
  const EquivalenceReport report = checkEquivalence(s.program, s.graph, options);
  EXPECT_TRUE(report.equivalent) << report.mismatch;
  EXPECT_EQ(report.level, VerificationLevel::FiniteField);
  EXPECT_EQ(report.scaledTwin, twin->describe());
}

TEST(ScaledTwin, ClustersLaunchTheTwinWithoutThem) {
  // 1000 rows in 8 parts of 128, blocks in clusters of 8 along them: the twin keeps two parts,
  // which hold no whole cluster. A cluster changes nothing a block computes, so the twin's
  // blocks launch alone and the check stays on the twin.
  graph::Schedule s = shipped("gemm_1000.cluster2.json");
  graph::BlockGraph& block = *s.graph.ops.at(0).block;
  ASSERT_EQ(block.grid[0], 8);
  block.cluster = {8, 1, 1};
  graph::validateKernelGraph(s.graph);
  const std::optional<ScaledTwin> twin = scaledTwin(s.program, s.graph);
  ASSERT_TRUE(twin);
  const graph::BlockGraph& shrunk = *twin->candidate.ops.at(0).block;
  EXPECT_LT(shrunk.grid[0], 8);
  EXPECT_EQ(shrunk.clusterBlocks(), 1);
  EquivalenceOptions options;
  options.seed = testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(options.seed));
  options.floatScales = {1.0};
  const EquivalenceReport report = checkEquivalence(s.program, s.graph, options);
  EXPECT_TRUE(report.equivalent) << report.mismatch;
  EXPECT_EQ(report.scaledTwin, twin->describe());
}

TEST(ScaledTwin, PartialLastPartsKeepTheirSize) {
  // 1030 = 8 x 128 + 6: the twin keeps the partial part of 6 after one whole period.
  const graph::Schedule s = shipped("gemm_1030.tiled.json");
  const std::optional<ScaledTwin> twin = scaledTwin(s.program, s.graph);
  ASSERT_TRUE(twin);
  for (const ShrunkDim& d : twin->dims) {
    EXPECT_EQ(d.from % d.period, d.to % d.period) << twin->describe();
    EXPECT_GT(d.to, d.period);
    EXPECT_LE(d.to, 2 * d.period);
  }
}

TEST(ScaledTwin, CausalRowsAndAttentionKeysStayWhole) {
  // The mask places each element by its row and column; keys are summed over.
  const graph::Schedule s = shipped("found/mha_prefill_causal_16x2048_d128.v922b834db1a6a827.json");
  const std::optional<ScaledTwin> twin = scaledTwin(s.program, s.graph);
  ASSERT_TRUE(twin);  // the heads shrink
  const graph::KernelGraph& g = twin->reference;
  EXPECT_EQ(tensor(g, "Q").shape[1], tensor(s.program, "Q").shape[1]);
  EXPECT_EQ(tensor(g, "Q").shape[2], tensor(s.program, "Q").shape[2]);
  EXPECT_EQ(tensor(g, "V").shape[1], tensor(s.program, "V").shape[1]);
  EXPECT_LT(tensor(g, "Q").shape[0], tensor(s.program, "Q").shape[0]);
}

TEST(ScaledTwin, AGridAxisCuttingTwoDimsKeepsBothWhole) {
  // Output tiles placed transposed: grid x cuts A's rows and C's columns.
  graph::Schedule s = shipped("gemm_1024.tiled.json");
  for (graph::KernelOp& op : s.graph.ops) {
    if (!op.block) continue;
    for (graph::BlockOp& bop : op.block->ops) {
      if (bop.kind == graph::OpKind::Output) std::swap(bop.omap[0], bop.omap[1]);
    }
  }
  graph::validateSchedule(s);
  EXPECT_FALSE(scaledTwin(s.program, s.graph));
}

// A random change to one block graph of `g`, or false where it has none.
bool mutate(graph::KernelGraph& g, std::mt19937_64& rng) {
  std::vector<size_t> blocks;
  for (size_t k = 0; k < g.ops.size(); ++k) {
    if (g.ops[k].block) blocks.push_back(k);
  }
  if (blocks.empty()) return false;
  const auto pick = [&rng](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  graph::BlockGraph& block = *g.ops[blocks[pick(blocks.size())]].block;
  graph::BlockOp& op = block.ops[pick(block.ops.size())];
  const int a = static_cast<int>(pick(graph::kGridAxes));
  const int b = static_cast<int>(pick(graph::kGridAxes));
  switch (pick(7)) {
    case 0:  // an input's tiles taken along other grid axes
      if (op.kind != graph::OpKind::Input || a == b) return false;
      std::swap(op.imap[a], op.imap[b]);
      return true;
    case 1:  // an input replicated where it was cut
      if (op.kind != graph::OpKind::Input || op.imap[a] == graph::kReplicated) return false;
      op.imap[a] = graph::kReplicated;
      return true;
    case 2:  // output tiles placed along other axes
      if (op.kind != graph::OpKind::Output || a == b) return false;
      std::swap(op.omap[a], op.omap[b]);
      return true;
    case 3:  // a constant changed
      if (op.kind != graph::OpKind::Scale && op.kind != graph::OpKind::AddScalar) return false;
      op.attrs.scale = op.attrs.scale * 2 + 1;
      return true;
    case 4:  // the operands of a binary op swapped
      if (op.inputs.size() != 2 || op.inputs[0] == op.inputs[1] ||
          block.tensors[op.inputs[0]].shape != block.tensors[op.inputs[1]].shape) {
        return false;
      }
      std::swap(op.inputs[0], op.inputs[1]);
      return true;
    case 5:  // another op of the same kind of operands
      if (op.kind == graph::OpKind::Exp) {
        op.kind = graph::OpKind::Square;
      } else if (op.kind == graph::OpKind::Square || op.kind == graph::OpKind::Silu) {
        op.kind = graph::OpKind::Exp;
      } else if (op.kind == graph::OpKind::Add) {
        op.kind = graph::OpKind::Mul;
      } else if (op.kind == graph::OpKind::Mul || op.kind == graph::OpKind::Div) {
        op.kind = graph::OpKind::Sub;
      } else {
        return false;
      }
      return true;
    default:  // one block fewer along an axis
      if (block.grid[a] <= 1) return false;
      --block.grid[a];
      return true;
  }
}

TEST(ScaledTwin, RandomSchedulesAndMutantsGetTheRealShapesVerdict) {
  // MUGRAPH_TEST_SEED replays a run.
  const char* replay = std::getenv("MUGRAPH_TEST_SEED");
  const uint64_t first = replay ? std::stoull(replay) : testing::freshSeed();
  SCOPED_TRACE(testing::seedTrace(first));
  std::mt19937_64 rng(first);
  EquivalenceOptions options;
  options.seed = first;
  // Fingerprints alone: random programs overflow in double (exp of exp, division by a
  // difference) at the real and the twin shapes alike, which says nothing of the twin.
  options.floatScales.clear();
  options.trials = 2;
  options.scaledTwin = false;
  int twins = 0, wrongOnTwins = 0, correctOnTwins = 0, selection = 0;
  for (uint64_t i = 0; i < 600; ++i) {
    mugraph::testing::RandomGraphs generator(first + i);
    graph::Schedule s = generator.schedule();
    const bool mutant = i % 3 != 0;
    if (mutant) {
      // The first of a few random changes that leaves a valid schedule (an invalid one never
      // reaches a check).
      const graph::Schedule original = s;
      bool valid = false;
      for (int attempt = 0; attempt < 20 && !valid; ++attempt) {
        s = original;
        if (!mutate(s.graph, rng)) continue;
        try {
          graph::validateSchedule(s);
          valid = true;
        } catch (const std::exception&) {
        }
      }
      if (!valid) continue;
    }
    // Any shrink at all, however little work it saves.
    const std::optional<ScaledTwin> twin = scaledTwin(s.program, s.graph, 1.0);
    if (!twin) continue;
    SCOPED_TRACE("schedule " + std::to_string(i) + (mutant ? " (mutant)" : "") + ", twin " +
                 twin->describe());
    EquivalenceReport real, small;
    try {
      real = checkEquivalence(s.program, s.graph, options);
    } catch (const std::exception& e) {
      // Refused at the real shapes (the interpreter, or a divisor that vanishes identically):
      // the twin must be refused alike.
      try {
        checkEquivalence(twin->reference, twin->candidate, options);
        ADD_FAILURE() << "refused at the real shapes only: " << e.what();
      } catch (const std::exception& twinError) {
        EXPECT_STREQ(typeid(e).name(), typeid(twinError).name()) << e.what() << " / " << twinError.what();
      }
      continue;
    }
    small = checkEquivalence(twin->reference, twin->candidate, options);
    if (real.maxMeaning == "selection" || small.maxMeaning == "selection") {
      // Max selecting by a random total order: the verdict of such a check turns on the
      // trials' orders, at any shape (verify/README.md, "max").
      ++selection;
      continue;
    }
    EXPECT_EQ(real.equivalent, small.equivalent) << real.mismatch << " / " << small.mismatch;
    EXPECT_EQ(real.level, small.level);
    if (real.level == VerificationLevel::FiniteField) {
      EXPECT_EQ(real.degree, small.degree);
    }
    // (An unmutated random schedule may still differ in the field where it moves an
    // uninterpreted op, at both shapes alike.)
    correctOnTwins += !mutant && small.equivalent;
    ++twins;
    wrongOnTwins += !small.equivalent;
  }
  std::cout << "[scaled twin] " << twins << " random schedules and mutants with a twin, "
            << wrongOnTwins << " of them wrong, " << correctOnTwins
            << " unmutated and equivalent; each the verdict at the real shapes (" << selection
            << " more with max as a selection, not compared)\n";
  EXPECT_GE(twins, 100);
  // Enough wrong ones to mean something, whatever the seed: 25-47 over 20 seeds, and 18 once in
  // CI (a floor of 20 failed it).
  EXPECT_GE(wrongOnTwins, 10);
  EXPECT_GE(correctOnTwins, 30);
}

}  // namespace
}  // namespace mugraph::verify
