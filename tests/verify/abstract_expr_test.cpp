// Abstract expressions and the Z3 pruning oracle on the GQA split-KV schedule and a tiled
// GEMM: every prefix term is accepted, the finished schedules are equivalent to their
// programs, and unrelated computations (wrong inputs, extents, divisors) are rejected.
#include <gtest/gtest.h>
#include <tbb/parallel_for.h>

#include <chrono>
#include <cstdio>
#include <set>
#include <thread>

#include "graph/builder.h"
#include "verify/abstract_expr.h"
#include "verify/abstract_expr_oracle.h"
#include "verify/axioms.h"

namespace mugraph::verify {
namespace {

using E = AbstractExpr;
using graph::BlockGraphBuilder;
using graph::DType;
using graph::GraphBuilder;
using graph::KernelGraph;
using graph::OpAttrs;
using graph::OpKind;

OpAttrs reduceAttrs(int dim, int64_t to = 1) {
  OpAttrs attrs;
  attrs.dim = dim;
  attrs.to = to;
  return attrs;
}

KernelGraph gqaProgram() {
  GraphBuilder p("gqa");
  auto q = p.input("Q", DType::F16, {2, 256, 64});
  auto k = p.input("K", DType::F16, {2, 64, 4096});
  auto v = p.input("V", DType::F16, {2, 4096, 64});
  auto a = p.op(OpKind::Matmul, {q, k}, {}, "A");
  auto e = p.op(OpKind::Exp, {a}, {}, "E");
  auto s = p.op(OpKind::ReduceSum, {e}, reduceAttrs(2), "S");
  auto o = p.op(OpKind::Matmul, {p.op(OpKind::Div, {e, s}), v}, {}, "O");
  p.output(o);
  return p.finish();
}

KernelGraph gqaSplitKvSchedule(const KernelGraph& program) {
  GraphBuilder g = GraphBuilder::withInputsOf(program, "gqa_split_kv");
  const std::vector<graph::TensorId>& in = g.graph().inputs;
  BlockGraphBuilder k1({2, 16, 1}, 128, 4, {g.desc(in[0]), g.desc(in[1]), g.desc(in[2])});
  auto q = k1.input(0, {0, -1, -1}, -1);
  auto k = k1.input(1, {0, 2, -1}, 2);
  auto v = k1.input(2, {0, 1, -1}, 1);
  auto e = k1.op(OpKind::Exp, {k1.op(OpKind::Matmul, {q, k})});
  auto s = k1.op(OpKind::ReduceSum, {e}, reduceAttrs(2));
  auto p = k1.op(OpKind::Matmul, {e, v});
  auto sAcc = k1.op(OpKind::AccumSum, {s});
  auto pAcc = k1.op(OpKind::AccumSum, {p});
  k1.output(pAcc, {0, 2, -1});
  k1.output(sAcc, {0, 2, -1});
  auto parts =
      g.blockGraph("gqa_partial", k1.block(), in, {{"Opart", DType::F32}, {"Spart", DType::F32}});

  BlockGraphBuilder k2({2, 4, 1}, 128, 1, {g.desc(parts[0]), g.desc(parts[1])});
  auto oTile = k2.input(0, {0, 1, -1}, -1);
  auto sTile = k2.input(1, {0, 1, -1}, -1);
  auto oSum = k2.op(OpKind::ReduceSum, {oTile}, reduceAttrs(2, 64));
  auto sSum = k2.op(OpKind::ReduceSum, {sTile}, reduceAttrs(2));
  k2.output(k2.op(OpKind::Div, {oSum, sSum}), {0, 1, -1});
  auto out = g.blockGraph("gqa_combine", k2.block(), parts, {{"O", DType::F16}});
  g.output(out[0]);
  return g.finish();
}

KernelGraph gemmProgram() {
  GraphBuilder p("gemm");
  auto a = p.input("A", DType::F16, {1024, 1024});
  auto b = p.input("B", DType::F16, {1024, 1024});
  p.output(p.op(OpKind::Matmul, {a, b}, {}, "C"));
  return p.finish();
}

KernelGraph tiledGemmSchedule(const KernelGraph& program) {
  GraphBuilder g = GraphBuilder::withInputsOf(program, "gemm_tiled");
  const std::vector<graph::TensorId>& in = g.graph().inputs;
  BlockGraphBuilder k({8, 8, 1}, 256, 16, {g.desc(in[0]), g.desc(in[1])});
  auto a = k.input(0, {0, -1, -1}, 1);
  auto b = k.input(1, {-1, 1, -1}, 0);
  k.output(k.op(OpKind::AccumSum, {k.op(OpKind::Matmul, {a, b})}), {0, 1, -1});
  g.output(g.blockGraph("gemm", k.block(), in, {{"C", DType::F16}})[0]);
  return g.finish();
}

AbstractExprRef outputTerm(const KernelGraph& graph) {
  return abstractExpressions(graph).at(graph.outputs.at(0));
}

// The terms a search meets while building `schedule`: every kernel tensor and every block
// tensor of every prefix (first j ops) of every block graph.
std::vector<AbstractExprRef> prefixTerms(const KernelGraph& schedule) {
  std::vector<AbstractExprRef> kernelTerms = abstractExpressions(schedule);
  std::set<std::string> seen;
  std::vector<AbstractExprRef> terms;
  auto keep = [&](const AbstractExprRef& term) {
    if (term && seen.insert(term->str()).second) terms.push_back(term);
  };
  for (const AbstractExprRef& term : kernelTerms) keep(term);
  for (const graph::KernelOp& op : schedule.ops) {
    if (!op.block) continue;
    std::vector<AbstractExprRef> inputs;
    for (graph::TensorId id : op.inputs) inputs.push_back(kernelTerms[id]);
    graph::BlockGraph prefix = *op.block;
    for (size_t j = 1; j <= op.block->ops.size(); ++j) {
      prefix.ops.assign(op.block->ops.begin(), op.block->ops.begin() + j);
      for (const AbstractExprRef& term : abstractExpressionsOfBlock(prefix, inputs)) keep(term);
    }
  }
  return terms;
}

// GQA's terms, written out as the brief of this feature states them.
struct GqaTerms {
  AbstractExprRef q = E::input("Q"), k = E::input("K"), v = E::input("V");
  AbstractExprRef exps = E::exp(E::sum(64, E::mul(q, k)));
  AbstractExprRef program = E::sum(4096, E::mul(E::div(exps, E::sum(4096, exps)), v));
  AbstractExprRef schedule = E::div(E::sum(16, E::sum(4, E::sum(64, E::mul(exps, v)))),
                                    E::sum(16, E::sum(4, E::sum(64, exps))));
};

TEST(AbstractExprTest, CanonicalTextAndHashConsing) {
  AbstractExprRef qk = E::sum(64, E::mul(E::input("Q"), E::input("K")));
  EXPECT_EQ(qk->str(), "sum(64,mul(Q,K))");
  EXPECT_EQ(qk, E::sum(64, E::mul(E::input("Q"), E::input("K"))));
  EXPECT_EQ(E::sum(1, qk), qk);
  EXPECT_EQ(E::mul(qk, E::constant(0.125))->str(), "mul(sum(64,mul(Q,K)),const(0.125))");
  EXPECT_EQ(canonicalize(E::sum(4, E::sum(64, E::mul(E::input("K"), E::input("Q")))))->str(),
            "sum(256,mul(K,Q))");
}

TEST(AbstractExprTest, GraphTermsMatchTheHandWrittenOnes) {
  KernelGraph program = gqaProgram();
  GqaTerms gqa;
  EXPECT_EQ(outputTerm(program), gqa.program);
  EXPECT_EQ(outputTerm(gqaSplitKvSchedule(program)), gqa.schedule);
  AbstractExprRef gemm = E::sum(1024, E::mul(E::input("A"), E::input("B")));
  EXPECT_EQ(outputTerm(gemmProgram()), gemm);
  EXPECT_EQ(outputTerm(tiledGemmSchedule(gemmProgram())),
            E::sum(16, E::sum(64, gemm->operands()[0])));
}

TEST(AbstractExprTest, EveryGqaPrefixIsAPossibleSubexpression) {
  KernelGraph program = gqaProgram();
  SubexpressionOracle oracle({outputTerm(program)});
  for (const AbstractExprRef& term : prefixTerms(gqaSplitKvSchedule(program))) {
    auto start = std::chrono::steady_clock::now();
    bool possible = oracle.isPossibleSubexpression(term);
    std::chrono::duration<double, std::milli> ms = std::chrono::steady_clock::now() - start;
    std::printf("  %7.2f ms  %s\n", ms.count(), term->str().c_str());
    EXPECT_TRUE(possible) << term->str();
  }
  OracleStats s = oracle.stats();
  std::printf("  queries %llu, prechecked %llu, z3 %llu (proved %llu), z3 time %.3f s\n",
              static_cast<unsigned long long>(s.queries),
              static_cast<unsigned long long>(s.precheckAccepted + s.precheckRejected),
              static_cast<unsigned long long>(s.z3Queries),
              static_cast<unsigned long long>(s.z3Proved), s.z3Seconds);
  EXPECT_EQ(s.timeouts, 0u);
}

TEST(AbstractExprTest, EveryGemmPrefixIsAPossibleSubexpression) {
  KernelGraph program = gemmProgram();
  SubexpressionOracle oracle({outputTerm(program)});
  for (const AbstractExprRef& term : prefixTerms(tiledGemmSchedule(program))) {
    EXPECT_TRUE(oracle.isPossibleSubexpression(term)) << term->str();
  }
  EXPECT_EQ(oracle.stats().timeouts, 0u);
}

TEST(AbstractExprTest, FinishedSchedulesAreEquivalentToTheirPrograms) {
  KernelGraph gqa = gqaProgram();
  SubexpressionOracle gqaOracle({outputTerm(gqa)});
  EXPECT_TRUE(gqaOracle.isEquivalent(outputTerm(gqaSplitKvSchedule(gqa)), outputTerm(gqa)));
  KernelGraph gemm = gemmProgram();
  SubexpressionOracle gemmOracle({outputTerm(gemm)});
  EXPECT_TRUE(gemmOracle.isEquivalent(outputTerm(tiledGemmSchedule(gemm)), outputTerm(gemm)));
  EXPECT_EQ(gqaOracle.stats().timeouts + gemmOracle.stats().timeouts, 0u);
}

TEST(AbstractExprTest, UnrelatedComputationsAreRejected) {
  GqaTerms t;
  SubexpressionOracle oracle({t.program});
  AbstractExprRef attention = E::sum(4096, E::mul(t.exps, t.v));
  AbstractExprRef denominator = E::sum(4096, t.exps);
  struct Case {
    const char* what;
    AbstractExprRef term;
  };
  std::vector<Case> cases = {
      {"exp(Q) V", E::sum(4096, E::mul(E::exp(t.q), t.v))},
      {"exp(Q) alone", E::exp(t.q)},
      {"Q V without K", E::mul(t.q, t.v)},
      {"sum past the full extent", E::sum(8192, t.exps)},
      {"exp of a partial contraction", E::exp(E::sum(32, E::mul(t.q, t.k)))},
      {"divided by the wrong tensor", E::div(attention, E::sum(4096, t.v))},
      {"divided by an unnormalized score", E::div(t.exps, E::sum(64, E::mul(t.q, t.k)))},
      {"exp applied twice", E::exp(t.exps)},
      {"an input the program lacks", E::mul(t.q, E::input("W"))},
      {"an op the program lacks", E::silu(t.exps)},
  };
  for (const Case& c : cases) {
    EXPECT_FALSE(oracle.isPossibleSubexpression(c.term)) << c.what << ": " << c.term->str();
  }
  EXPECT_FALSE(oracle.isEquivalent(E::div(attention, E::sum(2048, t.exps)), t.program));
  EXPECT_FALSE(oracle.isEquivalent(attention, t.program));
  EXPECT_TRUE(oracle.isEquivalent(E::div(attention, denominator), t.program));
  EXPECT_EQ(oracle.stats().timeouts, 0u);

  SubexpressionOracle gemm({E::sum(1024, E::mul(E::input("A"), E::input("B")))});
  EXPECT_FALSE(gemm.isPossibleSubexpression(E::sum(64, E::mul(E::input("A"), E::input("A")))));
}

// Past its deadline (a time-limited search's) the oracle asks Z3 nothing: a term Z3 refutes is
// answered "possible", so pruning loses no schedule, and the answer is not cached; prechecks
// (an input the program lacks) still reject.
TEST(AbstractExprTest, PastItsDeadlineTheOracleAnswersPossibleWithoutZ3) {
  GqaTerms t;
  const AbstractExprRef partialExp = E::exp(E::sum(32, E::mul(t.q, t.k)));
  OracleOptions late;
  late.deadline = std::chrono::steady_clock::now();
  SubexpressionOracle oracle({t.program}, late);
  EXPECT_TRUE(oracle.isPossibleSubexpression(partialExp));
  EXPECT_TRUE(oracle.isPossibleSubexpression(partialExp));
  EXPECT_FALSE(oracle.isPossibleSubexpression(E::mul(t.q, E::input("W"))));
  EXPECT_TRUE(oracle.isEquivalent(E::sum(4096, t.exps), t.program));
  const OracleStats s = oracle.stats();
  EXPECT_EQ(s.z3Queries, 0u);
  EXPECT_EQ(s.pastDeadline, 3u);  // the same term twice: never cached
  EXPECT_EQ(s.cacheHits, 0u);
  SubexpressionOracle inTime({t.program});
  EXPECT_FALSE(inTime.isPossibleSubexpression(partialExp));
  EXPECT_EQ(inTime.stats().pastDeadline, 0u);
}

// sqrt and silu are uninterpreted here as in the finite field (verify/README.md): equal
// arguments give equal terms, and no identity of the real function is known.
TEST(AbstractExprTest, UninterpretedOpsMatchTheirFieldMeaning) {
  const AbstractExprRef a = E::input("A"), b = E::input("B");
  SubexpressionOracle oracle({E::sqrt(E::mul(a, b))});
  EXPECT_TRUE(oracle.isEquivalent(E::sqrt(E::mul(b, a)), E::sqrt(E::mul(a, b))));
  EXPECT_FALSE(oracle.isEquivalent(E::mul(E::sqrt(a), E::sqrt(b)), E::sqrt(E::mul(a, b))));
  EXPECT_TRUE(oracle.isEquivalent(E::silu(E::add(b, a)), E::silu(E::add(a, b))));
  EXPECT_FALSE(oracle.isEquivalent(E::silu(E::add(a, b)), E::add(E::silu(a), E::silu(b))));
  EXPECT_FALSE(oracle.isEquivalent(E::sqrt(a), E::silu(a)));
  EXPECT_EQ(oracle.stats().timeouts, 0u);
}

TEST(AbstractExprTest, EachEquivalenceAxiomIsUsable) {
  AbstractExprRef a = E::input("A"), b = E::input("B"), c = E::input("C");
  AbstractExprRef two = E::constant(2);
  SubexpressionOracle oracle({});
  struct Case {
    const char* axiom;
    AbstractExprRef lhs, rhs;
  };
  std::vector<Case> cases = {
      {"add-assoc", E::add(E::add(a, b), c), E::add(a, E::add(b, c))},
      {"mul-assoc", E::mul(E::mul(a, b), c), E::mul(a, E::mul(b, c))},
      {"mul-add-distrib", E::mul(a, E::add(b, c)), E::add(E::mul(a, b), E::mul(a, c))},
      {"div-add", E::div(E::add(a, b), c), E::add(E::div(a, c), E::div(b, c))},
      {"mul-div", E::mul(a, E::div(b, c)), E::div(E::mul(a, b), c)},
      {"exp-add", E::exp(E::add(a, b)), E::mul(E::exp(a), E::exp(b))},
      {"sum-add", E::sum(8, E::add(a, b)), E::add(E::sum(8, a), E::sum(8, b))},
      // Not literally nested, so only Z3's sum-split (after sum-div) can merge the sums.
      {"sum-split", E::sum(16, E::div(E::sum(4, a), b)), E::div(E::sum(64, a), b)},
      {"sum-mul-const", E::sum(8, E::mul(a, two)), E::mul(E::sum(8, a), two)},
      {"sum-div", E::sum(8, E::div(a, b)), E::div(E::sum(8, a), b)},
  };
  for (const Case& c : cases) {
    EXPECT_TRUE(oracle.isEquivalent(c.lhs, c.rhs)) << c.axiom;
  }
  // No law pulls a non-constant factor out of a sum.
  EXPECT_FALSE(oracle.isEquivalent(E::sum(8, E::mul(a, b)), E::mul(E::sum(8, a), b)));
  EXPECT_FALSE(oracle.isEquivalent(E::exp(E::mul(a, b)), E::mul(E::exp(a), E::exp(b))));
  EXPECT_EQ(oracle.stats().timeouts, 0u);
}

TEST(AbstractExprTest, CacheHitsAreCounted) {
  GqaTerms t;
  SubexpressionOracle oracle({t.program});
  AbstractExprRef partial = E::sum(64, E::mul(t.exps, t.v));
  EXPECT_TRUE(oracle.isPossibleSubexpression(partial));
  EXPECT_EQ(oracle.stats().cacheHits, 0u);
  EXPECT_TRUE(oracle.isPossibleSubexpression(partial));
  // Same canonical form (operands of mul swapped): also a hit.
  EXPECT_TRUE(oracle.isPossibleSubexpression(E::sum(64, E::mul(t.v, t.exps))));
  OracleStats s = oracle.stats();
  EXPECT_EQ(s.queries, 3u);
  EXPECT_EQ(s.cacheHits, 2u);
  EXPECT_EQ(s.z3Queries, 1u);
}

TEST(AbstractExprTest, ResourceLimitKeepsTheCandidate) {
  GqaTerms t;
  OracleOptions tiny;
  tiny.rlimit = 1;
  SubexpressionOracle oracle({t.program}, tiny);
  // Unrelated, but Z3 cannot refute it within the limit: kept, and counted. A thread of its
  // own gets a fresh Z3 context, so the limit is met before any saturation.
  bool kept = false;
  std::thread([&] {
    kept = oracle.isPossibleSubexpression(E::sum(1024, E::mul(E::exp(t.k), t.q)));
  }).join();
  EXPECT_TRUE(kept);
  EXPECT_EQ(oracle.stats().timeouts, 1u);
}

TEST(AbstractExprTest, ConcurrentQueriesAgree) {
  KernelGraph program = gqaProgram();
  std::vector<AbstractExprRef> terms = prefixTerms(gqaSplitKvSchedule(program));
  SubexpressionOracle oracle({outputTerm(program)});
  std::vector<int> answers(terms.size() * 2, -1);
  tbb::parallel_for(size_t{0}, answers.size(), [&](size_t i) {
    answers[i] = oracle.isPossibleSubexpression(terms[i % terms.size()]) ? 1 : 0;
  });
  for (int answer : answers) EXPECT_EQ(answer, 1);
}

TEST(AbstractExprTest, AxiomTableIsWellFormed) {
  z3::context ctx;
  AxiomVocabulary vocabulary(ctx);
  AxiomDsl dsl(vocabulary);
  std::set<std::string_view> names;
  for (const Axiom& axiom : axiomTable()) {
    EXPECT_TRUE(names.insert(axiom.name).second) << axiom.name;
    EXPECT_TRUE(axiom.formula(dsl).is_quantifier()) << axiom.name;
  }
}

}  // namespace
}  // namespace mugraph::verify
