// The mutation suite: wrong variants of each shipped schedule, made by editing its JSON as a
// user might, must never verify. A mutant is either rejected when loading (invalid) or
// loads and is found not equivalent; correct variants (other tilings) must verify.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>

#include "graph/error.h"
#include "graph/json_format.h"
#include "verify/equivalence.h"

namespace mugraph::verify {
namespace {

using nlohmann::json;

struct Mutation {
  std::string kind;
  std::function<void(json&)> apply;
  bool stillEquivalent = false;  // a correct variant
};

json axes(int x, int y, int z) {
  return {{"x", x}, {"y", y}, {"z", z}};
}

json& kernelOp(json& s, int kernel, int op) {
  return s["kernels"][kernel]["ops"][op];
}

void insertOp(json& s, int kernel, int position, json op) {
  auto& ops = s["kernels"][kernel]["ops"];
  ops.insert(ops.begin() + position, std::move(op));
}

void retargetTensor(json& s, const std::string& name, json shape) {
  for (json& t : s["tensors"]) {
    if (t["name"] == name) t["shape"] = std::move(shape);
  }
}

json loadShipped(const std::string& name) {
  std::ifstream in(std::string(MUGRAPH_SOURCE_DIR) + "/schedules/" + name);
  return json::parse(in);
}

// kernel 0 ops: 0 q, 1 k, 2 v, 3 a=matmul(q,k), 4 e=exp(a), 5 s=reduce_sum(e), 6 p=matmul(e,v),
// 7 s_acc, 8 p_acc, 9 store p_acc->Opart, 10 store s_acc->Spart.
// kernel 1 ops: 0 o, 1 s, 2 o_sum=accum_sum(o), 3 s_sum=accum_sum(s), 4 out=div, 5 store.
std::vector<Mutation> gqaMutations() {
  return {
      {"K split replaced by replication", [](json& s) { kernelOp(s, 0, 1)["imap"]["y"] = -1; }},
      {"V split replaced by replication", [](json& s) { kernelOp(s, 0, 2)["imap"]["y"] = -1; }},
      {"Q split along the head dim", [](json& s) { kernelOp(s, 0, 0)["imap"]["z"] = 2; }},
      {"Q replicated over row blocks", [](json& s) { kernelOp(s, 0, 0)["imap"]["z"] = -1; }},
      {"K for-loop over the wrong dim", [](json& s) { kernelOp(s, 0, 1)["fmap"] = 1; }},
      {"V not advanced by the for-loop", [](json& s) { kernelOp(s, 0, 2)["fmap"] = -1; }},
      {"K not advanced by the for-loop", [](json& s) { kernelOp(s, 0, 1)["fmap"] = -1; }},
      {"softmax sum over the wrong dim", [](json& s) { kernelOp(s, 0, 5)["dim"] = 1; }},
      {"accumulator dropped", [](json& s) { kernelOp(s, 0, 10)["inputs"] = {"s"}; }},
      {"sum accumulator replaced by max", [](json& s) { kernelOp(s, 0, 7)["op"] = "accum_max"; }},
      {"output accumulator replaced by max",
       [](json& s) { kernelOp(s, 0, 8)["op"] = "accum_max"; }},
      {"E·V operands swapped",
       [](json& s) {
         kernelOp(s, 0, 6)["inputs"] = {"v", "e"};
       }},
      {"Q·K operands swapped",
       [](json& s) {
         kernelOp(s, 0, 3)["inputs"] = {"k", "q"};
       }},
      {"exp misplaced: sum of raw scores", [](json& s) { kernelOp(s, 0, 5)["inputs"] = {"a"}; }},
      {"exp missing before E·V",
       [](json& s) {
         kernelOp(s, 0, 6)["inputs"] = {"a", "v"};
       }},
      {"exp doubled",
       [](json& s) {
         insertOp(s, 0, 5, {{"op", "exp"}, {"inputs", {"e"}}, {"output", "e2"}});
         kernelOp(s, 0, 6)["inputs"] = {"e2"};
         kernelOp(s, 0, 7)["inputs"] = {"e2", "v"};
       }},
      {"division by the wrong tensor",
       [](json& s) {
         kernelOp(s, 1, 4)["inputs"] = {"o_sum", "o_sum"};
       }},
      {"division inverted",
       [](json& s) {
         kernelOp(s, 1, 4)["inputs"] = {"s_sum", "o_sum"};
       }},
      {"combine by max instead of sum", [](json& s) { kernelOp(s, 1, 2)["op"] = "accum_max"; }},
      {"combine multiplies instead of divides", [](json& s) { kernelOp(s, 1, 4)["op"] = "mul"; }},
      {"combine subtracts instead of divides", [](json& s) { kernelOp(s, 1, 4)["op"] = "sub"; }},
      {"combine reads half of the splits", [](json& s) { s["kernels"][1]["forloop"] = 8; }},
      {"reduction reads a tile defined later (cycle)",
       [](json& s) { kernelOp(s, 0, 5)["inputs"] = {"p"}; }},
      {"partial sums written at the wrong offsets",
       [](json& s) { kernelOp(s, 0, 9)["omap"] = axes(0, 1, 2); }},
      {"KV splits halved without resizing the partial buffers",
       [](json& s) { s["kernels"][0]["grid"]["y"] = 8; }},
      // Correct variants: other tilings of the same computation. Re-reading the whole split
      // every iteration computes every partial sum four times over, numerator and
      // denominator alike, so the division cancels it: wasteful but equivalent.
      {"K and V re-read every iteration",
       [](json& s) {
         kernelOp(s, 0, 1)["fmap"] = -1;
         kernelOp(s, 0, 2)["fmap"] = -1;
       },
       true},
      {"for-loop of 8 iterations", [](json& s) { s["kernels"][0]["forloop"] = 8; }, true},
      {"for-loop of 2 iterations", [](json& s) { s["kernels"][0]["forloop"] = 2; }, true},
      {"8 KV splits",
       [](json& s) {
         s["kernels"][0]["grid"]["y"] = 8;
         retargetTensor(s, "Opart", {2, 256, 512});
         retargetTensor(s, "Spart", {2, 256, 8});
         s["kernels"][1]["forloop"] = 8;
       },
       true},
      {"256 threads", [](json& s) { s["kernels"][0]["threads"] = 256; }, true},
      {"no fusion", [](json& s) { s["kernels"][0]["fusion"] = json::array(); }, true},
      {"combine over 8 row blocks", [](json& s) { s["kernels"][1]["grid"]["y"] = 8; }, true},
  };
}

// kernel 0 ops: 0 a, 1 b, 2 c=matmul(a,b), 3 c_acc, 4 store c_acc->C.
std::vector<Mutation> gemmMutations() {
  auto wrapBeforeAccumulator = [](const std::string& op, std::vector<std::string> inputs,
                                  json extra = json::object()) {
    return [op, inputs, extra](json& s) {
      json node = {{"op", op}, {"inputs", inputs}, {"output", "c2"}};
      node.update(extra);
      insertOp(s, 0, 3, node);
      kernelOp(s, 0, 4)["inputs"] = {"c2"};
    };
  };
  return {
      {"A split replaced by replication", [](json& s) { kernelOp(s, 0, 0)["imap"]["x"] = -1; }},
      {"B split replaced by replication", [](json& s) { kernelOp(s, 0, 1)["imap"]["y"] = -1; }},
      {"A for-loop over the wrong dim", [](json& s) { kernelOp(s, 0, 0)["fmap"] = 0; }},
      {"B for-loop over the wrong dim", [](json& s) { kernelOp(s, 0, 1)["fmap"] = 1; }},
      {"B not advanced by the for-loop", [](json& s) { kernelOp(s, 0, 1)["fmap"] = -1; }},
      {"A and B re-read every iteration",
       [](json& s) {
         kernelOp(s, 0, 0)["fmap"] = -1;
         kernelOp(s, 0, 1)["fmap"] = -1;
       }},
      {"output tiles placed transposed",
       [](json& s) { kernelOp(s, 0, 4)["omap"] = axes(1, 0, -1); }},
      {"A tiles taken along the wrong grid axis",
       [](json& s) { kernelOp(s, 0, 0)["imap"] = axes(-1, 0, -1); }},
      {"B tiles taken along the wrong grid axis",
       [](json& s) { kernelOp(s, 0, 1)["imap"] = axes(1, -1, -1); }},
      {"both operands along swapped grid axes",
       [](json& s) {
         kernelOp(s, 0, 0)["imap"] = axes(-1, 0, -1);
         kernelOp(s, 0, 1)["imap"] = axes(1, -1, -1);
       }},
      {"accumulator dropped", [](json& s) { kernelOp(s, 0, 4)["inputs"] = {"c"}; }},
      {"sum accumulator replaced by max", [](json& s) { kernelOp(s, 0, 3)["op"] = "accum_max"; }},
      {"matmul operands swapped",
       [](json& s) {
         kernelOp(s, 0, 2)["inputs"] = {"b", "a"};
       }},
      {"element-wise product instead of matmul", [](json& s) { kernelOp(s, 0, 2)["op"] = "mul"; }},
      {"exp of the partial product", wrapBeforeAccumulator("exp", {"c"})},
      {"partial product scaled by 2", wrapBeforeAccumulator("scale", {"c"}, {{"c", 2.0}})},
      {"partial product squared", wrapBeforeAccumulator("square", {"c"})},
      {"partial product doubled by add", wrapBeforeAccumulator("add", {"c", "c"})},
      {"partial product minus itself", wrapBeforeAccumulator("sub", {"c", "c"})},
      {"partial product divided by itself", wrapBeforeAccumulator("div", {"c", "c"})},
      {"silu of the partial product", wrapBeforeAccumulator("silu", {"c"})},
      {"for-loop of more iterations than K has elements",
       [](json& s) { s["kernels"][0]["forloop"] = 2048; }},
      // Correct variants.
      {"for-loop of 12 iterations, the last one partial",
       [](json& s) { s["kernels"][0]["forloop"] = 12; }, true},
      {"for-loop of 8 iterations", [](json& s) { s["kernels"][0]["forloop"] = 8; }, true},
      {"for-loop of 32 iterations", [](json& s) { s["kernels"][0]["forloop"] = 32; }, true},
      {"grid 16 x 4",
       [](json& s) {
         s["kernels"][0]["grid"]["x"] = 16;
         s["kernels"][0]["grid"]["y"] = 4;
       },
       true},
      {"128 threads", [](json& s) { s["kernels"][0]["threads"] = 128; }, true},
  };
}

struct Counts {
  int invalid = 0, rejectedFiniteField = 0, rejectedFloat = 0, acceptedCorrect = 0;
  int fingerprintOnlyRejected = 0, fingerprintUndecided = 0;
  int onTwins = 0;  // checked on scaled twins, and again at the real shapes
};

// Runs every mutation twice: with the default checks (float tests, then fingerprints), and
// with fingerprints alone, so the finite-field test is shown to reject wrong schedules on
// its own and not only behind the float tests.
Counts runSuite(const std::string& file, const std::vector<Mutation>& mutations) {
  const json original = loadShipped(file);
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(file + " seed " + std::to_string(seed));
  Counts counts;
  int wrongKinds = 0;
  for (const Mutation& mutation : mutations) {
    SCOPED_TRACE(mutation.kind);
    json mutant = original;
    mutant.erase("hash");
    mutation.apply(mutant);
    EXPECT_NE(mutant, original);
    if (!mutation.stillEquivalent) ++wrongKinds;
    graph::Schedule schedule;
    try {
      schedule = graph::scheduleFromJson(mutant, file + " (" + mutation.kind + ")");
    } catch (const UserError& e) {
      EXPECT_FALSE(mutation.stillEquivalent) << "a correct variant failed to load: " << e.what();
      ++counts.invalid;
      continue;
    }
    EquivalenceOptions options;
    options.seed = seed;
    options.floatScales = {0.5};
    const EquivalenceReport report = checkEquivalence(schedule.program, schedule.graph, options);
    if (!report.scaledTwin.empty()) {
      // A verdict on a scaled twin (verify/README.md, "Scaled twins") must be the verdict at
      // the real shapes.
      EquivalenceOptions fullSize = options;
      fullSize.scaledTwin = false;
      fullSize.trials = 1;
      const EquivalenceReport real = checkEquivalence(schedule.program, schedule.graph, fullSize);
      EXPECT_EQ(report.equivalent, real.equivalent)
          << "twin " << report.scaledTwin << ": " << report.mismatch << " / real shapes: "
          << real.mismatch;
      ++counts.onTwins;
    }
    if (mutation.stillEquivalent) {
      EXPECT_TRUE(report.equivalent) << report.mismatch;
      EXPECT_EQ(report.level, VerificationLevel::FiniteField);
      counts.acceptedCorrect += report.equivalent;
      continue;
    }
    EXPECT_FALSE(report.equivalent) << "a wrong schedule verified";
    if (report.equivalent) continue;
    (report.mismatch.find("finite field") != std::string::npos ? counts.rejectedFiniteField
                                                               : counts.rejectedFloat) += 1;

    EquivalenceOptions fingerprintsOnly = options;
    fingerprintsOnly.floatScales.clear();
    fingerprintsOnly.trials = 1;
    const EquivalenceReport field =
        checkEquivalence(schedule.program, schedule.graph, fingerprintsOnly);
    EXPECT_FALSE(field.equivalent) << "fingerprints alone accepted a wrong schedule";
    if (field.level == VerificationLevel::FiniteField) {
      counts.fingerprintOnlyRejected += !field.equivalent;
    } else {
      ++counts.fingerprintUndecided;
    }
  }
  EXPECT_GE(wrongKinds, 20);
  std::cout << "[mutation suite] " << file << ": " << wrongKinds
            << " wrong kinds: " << counts.invalid << " rejected by validation, "
            << counts.rejectedFloat << " loaded and rejected by float tests, "
            << counts.rejectedFiniteField << " by fingerprints; with fingerprints alone "
            << counts.fingerprintOnlyRejected << " rejected and " << counts.fingerprintUndecided
            << " outside the field fragment (float-only ops); " << (mutations.size() - wrongKinds)
            << " correct variants, " << counts.acceptedCorrect << " accepted; "
            << counts.onTwins << " checked on scaled twins with the real shapes' verdict\n";
  return counts;
}

// The safe decode schedule (gqa_decode_4k.split_kv.json):
// kernel 0: 0 q, 1 k, 2 v, 3 a=matmul, 4 a_scaled=scale, 5 tile_max=reduce_max, 6 m=accum_max,
// 7 shifted=sub(a_scaled, m), 8 e=exp, 9 s=reduce_sum(e), 10 p=matmul(e, v),
// 11 s_acc=accum_rescaled_sum(s, m), 12 p_acc=accum_rescaled_sum(p, m), 13-15 store
// Opart, Spart, Mpart (m).
// kernel 1: 0 o, 1 s, 2 m_j, 3 m=accum_max(m_j), 4 dm=sub(m_j, m), 5 f=exp(dm),
// 6 o_f=mul(o, f), 7 s_f=mul(s, f), 8 o_sum, 9 s_sum=accum_rescaled_sum(.., m), 10 out=div,
// 11 store O.
std::vector<Mutation> safeDecodeMutations() {
  const auto inputs = [](json& s, int kernel, int op, json names) {
    kernelOp(s, kernel, op)["inputs"] = std::move(names);
  };
  const auto plainSum = [](json& s, int kernel, int op, const std::string& x) {
    json& target = kernelOp(s, kernel, op);
    target["op"] = "accum_sum";
    target["inputs"] = json::array({x});
  };
  return {
      // Rescaling mistakes.
      {"missing rescale of the exp·V partial", [=](json& s) { plainSum(s, 0, 12, "p"); }},
      {"missing rescale of the exp-sum partial", [=](json& s) { plainSum(s, 0, 11, "s"); }},
      {"exp shifted by the tile max, sums rescaled by the running max",
       [=](json& s) {
         inputs(s, 0, 7, {"a_scaled", "tile_max"});
       }},
      {"partial carries its last tile's max", [=](json& s) { inputs(s, 0, 15, {"tile_max"}); }},
      {"unscaled combine",
       [=](json& s) {
         inputs(s, 1, 8, {"o", "m"});
         inputs(s, 1, 9, {"s", "m"});
       }},
      {"combine rescales the exp-sums only",
       [=](json& s) {
         inputs(s, 1, 8, {"o", "m"});
       }},
      {"combine factor exp(m − m_j)",
       [=](json& s) {
         inputs(s, 1, 4, {"m", "m_j"});
       }},
      {"combine sums without the running rescale",
       [=](json& s) {
         plainSum(s, 1, 8, "o_f");
         plainSum(s, 1, 9, "s_f");
       }},
      {"combine reads the exp-sums as the maxes",
       [](json& s) { kernelOp(s, 1, 2)["from"] = "Spart"; }},
      {"max over the wrong dim", [](json& s) { kernelOp(s, 0, 5)["dim"] = 1; }},
      // Structural mistakes.
      {"K split replaced by replication", [](json& s) { kernelOp(s, 0, 1)["imap"]["y"] = -1; }},
      {"V split replaced by replication", [](json& s) { kernelOp(s, 0, 2)["imap"]["y"] = -1; }},
      {"K for-loop over the wrong dim", [](json& s) { kernelOp(s, 0, 1)["fmap"] = 1; }},
      {"V for-loop removed", [](json& s) { kernelOp(s, 0, 2)["fmap"] = -1; }},
      {"combine walks the wrong dim of O", [](json& s) { kernelOp(s, 1, 0)["fmap"] = 1; }},
      {"scale dropped", [](json& s) { kernelOp(s, 0, 4)["c"] = 1.0; }},
      {"division flipped",
       [=](json& s) {
         inputs(s, 1, 10, {"s_sum", "o_sum"});
       }},
      {"exp-sum of the shifted logits", [=](json& s) { inputs(s, 0, 9, {"shifted"}); }},
      {"exp·V with the shifted logits",
       [=](json& s) {
         inputs(s, 0, 10, {"shifted", "v"});
       }},
      {"exp-sum partial written as the max", [=](json& s) { inputs(s, 0, 15, {"s_acc"}); }},
  };
}

// (Shifting by the max of the unscaled logits is exact in the field but not safe: at logit
// std 16 its exp can underflow to 0 in double, so it is no "correct variant" here.)
TEST(MutationSuite, SafeDecodeRescalingMistakesNeverVerify) {
  runSuite("gqa_decode_4k.split_kv.json", safeDecodeMutations());
}

TEST(MutationSuite, GqaSplitKvWrongVariantsNeverVerify) {
  runSuite("gqa_mirage.split_kv.json", gqaMutations());
}

TEST(MutationSuite, TiledGemmWrongVariantsNeverVerify) {
  // 1024 rows and columns in parts of 128: most mutants are checked on scaled twins.
  EXPECT_GE(runSuite("gemm_1024.tiled.json", gemmMutations()).onTwins, 12);
}

}  // namespace
}  // namespace mugraph::verify
