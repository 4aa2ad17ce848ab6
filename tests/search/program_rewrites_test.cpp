// The rewrite table: which forms each rule produces for small programs (checked statement by
// statement against hand-derived text), that every form computes what the original does
// (the verifier's equivalence check), where the rules must refuse, and how the
// breadth-first enumeration orders, dedupes and caps the forms.
#include "search/program_rewrites.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "graph/hash.h"
#include "graph/program_text.h"
#include "verify/equivalence.h"

namespace mugraph::search {
namespace {

using Rules = std::vector<std::string>;

graph::Program parse(const std::string& text) {
  return graph::parseProgramText(text, "rewrites_test.mg");
}

const char* const kAttention =
    "program attention\n"
    "input Q f16 [2, 8, 4]\n"
    "input K f16 [2, 4, 16]\n"
    "input V f16 [2, 16, 4]\n"
    "A = matmul(Q, K)\n"
    "E = exp(A)\n"
    "S = reduce_sum(E, dim=2)\n"
    "O = matmul(div(E, S), V)\n"
    "output O\n";

const char* const kRmsNormMatmul =
    "program rmsnorm_matmul\n"
    "input X f16 [4, 16]\n"
    "input W f16 [16, 8]\n"
    "Y = matmul(rms_norm(X, dim=1), W)\n"
    "output Y\n";

verify::EquivalenceReport checkAgainst(const graph::Program& original, const ProgramForm& form) {
  verify::EquivalenceOptions options;
  options.seed = 7;
  return verify::checkEquivalence(original, form.program, options);
}

TEST(RewriteRules, TableNamesEveryRuleWithItsIdentity) {
  const std::vector<RewriteRule>& rules = rewriteRules();
  ASSERT_EQ(rules.size(), 3u);
  EXPECT_STREQ(rules[0].name, "div_past_matmul");
  EXPECT_STREQ(rules[1].name, "rms_norm_past_matmul");
  EXPECT_STREQ(rules[2].name, "safe_softmax");
  for (const RewriteRule& rule : rules) {
    EXPECT_NE(std::string(rule.identity).find('='), std::string::npos) << rule.name;
  }
}

TEST(ProgramForms, OriginalComesFirstUnchanged) {
  const graph::Program program = parse(kAttention);
  const std::vector<ProgramForm> forms = programForms(program, 8);
  ASSERT_FALSE(forms.empty());
  EXPECT_EQ(forms[0].program, program);
  EXPECT_TRUE(forms[0].rulesApplied.empty());
}

TEST(ProgramForms, DivPastMatmulMovesTheSoftmaxDivisionAfterTheSecondMatmul) {
  const graph::Program program = parse(kAttention);
  const std::vector<ProgramForm> forms = programForms(program, 8);
  ASSERT_EQ(forms.size(), 4u);  // and the safe softmax, alone and with the division moved
  EXPECT_EQ(forms[1].rulesApplied, Rules{"div_past_matmul"});
  // The division's old result (t0) is read by nothing any more and is dropped.
  EXPECT_EQ(graph::programToText(forms[1].program),
            "program attention\n"
            "input Q f16 [2, 8, 4]\n"
            "input K f16 [2, 4, 16]\n"
            "input V f16 [2, 16, 4]\n"
            "A = matmul(Q, K)\n"
            "E = exp(A)\n"
            "S = reduce_sum(E, dim=2)\n"
            "O_num = matmul(E, V)\n"
            "O = div(O_num, S)\n"
            "output O\n");
}

TEST(ProgramForms, DivPastMatmulFormIsEquivalentOverTheFiniteField) {
  const graph::Program program = parse(kAttention);
  const std::vector<ProgramForm> forms = programForms(program, 8);
  ASSERT_EQ(forms.size(), 4u);
  const verify::EquivalenceReport report = checkAgainst(program, forms[1]);
  EXPECT_TRUE(report.equivalent) << report.mismatch;
  EXPECT_EQ(report.level, verify::VerificationLevel::FiniteField) << report.levelReason;
}

TEST(ProgramForms, RmsNormPastMatmulExpandsTheNormIntoASumOfSquaresAfterTheMatmul) {
  const graph::Program program = parse(kRmsNormMatmul);
  const std::vector<ProgramForm> forms = programForms(program, 8);
  ASSERT_EQ(forms.size(), 2u);
  EXPECT_EQ(forms[1].rulesApplied, Rules{"rms_norm_past_matmul"});
  // 1/16: the mean over X's last dim, of size 16.
  EXPECT_EQ(graph::programToText(forms[1].program),
            "program rmsnorm_matmul\n"
            "input X f16 [4, 16]\n"
            "input W f16 [16, 8]\n"
            "Y_num = matmul(X, W)\n"
            "sq = square(X)\n"
            "sumsq = reduce_sum(sq, dim=1)\n"
            "meansq = scale(sumsq, c=0.0625)\n"
            "rms = sqrt(meansq)\n"
            "Y = div(Y_num, rms)\n"
            "output Y\n");
  const verify::EquivalenceReport report = checkAgainst(program, forms[1]);
  EXPECT_TRUE(report.equivalent) << report.mismatch;
  EXPECT_LT(report.maxRelError, 1e-9);
}

const char* const kNormGatedMlp =
    "program norm_mlp\n"
    "input X f16 [4, 16]\n"
    "input W1 f16 [16, 8]\n"
    "input W3 f16 [16, 8]\n"
    "N = rms_norm(X, dim=1)\n"
    "Y = mul(silu(matmul(N, W1)), matmul(N, W3))\n"
    "output Y\n";

size_t countOps(const graph::Program& program, graph::OpKind kind) {
  return static_cast<size_t>(
      std::count_if(program.ops.begin(), program.ops.end(),
                    [&](const graph::KernelOp& op) { return op.kind == kind; }));
}

TEST(ProgramForms, ANormBeforeTwoMatmulsExpandedPastBothComputesItsStatisticsOnce) {
  const graph::Program program = parse(kNormGatedMlp);
  const std::vector<ProgramForm> forms = programForms(program, 8);
  const auto both = std::find_if(forms.begin(), forms.end(), [](const ProgramForm& form) {
    return form.rulesApplied == Rules{"rms_norm_past_matmul", "rms_norm_past_matmul"};
  });
  ASSERT_NE(both, forms.end());
  // One sum of squares and one root, both divisions reading it; no rms_norm left.
  EXPECT_EQ(countOps(both->program, graph::OpKind::RmsNorm), 0u);
  EXPECT_EQ(countOps(both->program, graph::OpKind::Square), 1u);
  EXPECT_EQ(countOps(both->program, graph::OpKind::Sqrt), 1u);
  EXPECT_EQ(countOps(both->program, graph::OpKind::Div), 2u);
  EXPECT_EQ(both->program.ops.size(), 10u);
  const verify::EquivalenceReport report = checkAgainst(program, *both);
  EXPECT_TRUE(report.equivalent) << report.mismatch;
  EXPECT_EQ(report.level, verify::VerificationLevel::FiniteField) << report.levelReason;

  // Without merging (a program that computes values twice on purpose) each matmul keeps its own.
  const std::vector<ProgramForm> unmerged = programForms(program, 8, /*mergeEqualOps=*/false);
  const auto twice = std::find_if(unmerged.begin(), unmerged.end(), [](const ProgramForm& form) {
    return form.rulesApplied == Rules{"rms_norm_past_matmul", "rms_norm_past_matmul"};
  });
  ASSERT_NE(twice, unmerged.end());
  EXPECT_EQ(countOps(twice->program, graph::OpKind::Square), 2u);
  EXPECT_EQ(countOps(twice->program, graph::OpKind::Sqrt), 2u);
}

TEST(ProgramForms, FreshNamesAvoidEveryNameOfTheOriginal) {
  // Y_num is an input, sq is defined before the rewritten matmul (and dropped by the
  // rewrite), rms after it: the new tensors take the next free names instead.
  const graph::Program program = parse(
      "input X f16 [4, 16]\n"
      "input W f16 [16, 8]\n"
      "input Y_num f16 [4, 8]\n"
      "sq = rms_norm(X, dim=1)\n"
      "Y = matmul(sq, W)\n"
      "rms = add(Y, Y_num)\n"
      "output rms\n");
  const std::vector<ProgramForm> forms = programForms(program, 8);
  ASSERT_EQ(forms.size(), 2u);
  EXPECT_EQ(graph::programToText(forms[1].program),
            "input X f16 [4, 16]\n"
            "input W f16 [16, 8]\n"
            "input Y_num f16 [4, 8]\n"
            "Y_num1 = matmul(X, W)\n"
            "sq1 = square(X)\n"
            "sumsq = reduce_sum(sq1, dim=1)\n"
            "meansq = scale(sumsq, c=0.0625)\n"
            "rms1 = sqrt(meansq)\n"
            "Y = div(Y_num1, rms1)\n"
            "rms = add(Y, Y_num)\n"
            "output rms\n");
  const verify::EquivalenceReport report = checkAgainst(program, forms[1]);
  EXPECT_TRUE(report.equivalent) << report.mismatch;
}

TEST(ProgramForms, AnIntermediateThatIsAlsoAnOutputSurvivesTheRewrite) {
  const graph::Program program = parse(
      "input E f16 [2, 8, 16]\n"
      "input V f16 [2, 16, 4]\n"
      "S = reduce_sum(E, dim=2)\n"
      "P = div(E, S)\n"
      "O = matmul(P, V)\n"
      "output P\n"
      "output O\n");
  const std::vector<ProgramForm> forms = programForms(program, 8);
  ASSERT_EQ(forms.size(), 2u);
  const graph::Program& rewritten = forms[1].program;
  EXPECT_EQ(graph::programToText(rewritten),
            "input E f16 [2, 8, 16]\n"
            "input V f16 [2, 16, 4]\n"
            "S = reduce_sum(E, dim=2)\n"
            "P = div(E, S)\n"
            "O_num = matmul(E, V)\n"
            "O = div(O_num, S)\n"
            "output P\n"
            "output O\n");
  const verify::EquivalenceReport report = checkAgainst(program, forms[1]);
  EXPECT_TRUE(report.equivalent) << report.mismatch;
}

TEST(ProgramForms, SafeSoftmaxSubtractsTheRowMaxBeforeExp) {
  const graph::Program program = parse(kAttention);
  const std::vector<ProgramForm> forms = programForms(program, 8);
  ASSERT_EQ(forms.size(), 4u);
  EXPECT_EQ(forms[2].rulesApplied, Rules{"safe_softmax"});
  EXPECT_EQ(graph::programToText(forms[2].program),
            "program attention\n"
            "input Q f16 [2, 8, 4]\n"
            "input K f16 [2, 4, 16]\n"
            "input V f16 [2, 16, 4]\n"
            "A = matmul(Q, K)\n"
            "E_max = reduce_max(A, dim=2)\n"
            "E_shifted = sub(A, E_max)\n"
            "E = exp(E_shifted)\n"
            "S = reduce_sum(E, dim=2)\n"
            "t0 = div(E, S)\n"
            "O = matmul(t0, V)\n"
            "output O\n");
  EXPECT_EQ(forms[3].rulesApplied, (Rules{"safe_softmax", "div_past_matmul"}));
  for (size_t i = 2; i < forms.size(); ++i) {
    const verify::EquivalenceReport report = checkAgainst(program, forms[i]);
    EXPECT_TRUE(report.equivalent) << "form " << i << ": " << report.mismatch;
    EXPECT_EQ(report.level, verify::VerificationLevel::FiniteField) << report.levelReason;
  }
}

// QK-norm attention written without max subtraction, exp(rms_norm(Q)·rms_norm(K)) over its
// row sum: the rule gives it the safe form, which the verifier proves equal.
TEST(ProgramForms, SafeSoftmaxCoversQkNormAttention) {
  const graph::Program program = parse(
      "input Q f16 [2, 8, 4]\n"
      "input K f16 [2, 4, 16]\n"
      "input V f16 [2, 16, 4]\n"
      "E = exp(matmul(rms_norm(Q, dim=2), rms_norm(K, dim=1)))\n"
      "O = matmul(div(E, reduce_sum(E, dim=2)), V)\n"
      "output O\n");
  bool safe = false;
  for (const ProgramForm& form : programForms(program, 8)) {
    if (form.rulesApplied.empty() || form.rulesApplied[0] != "safe_softmax") continue;
    safe = true;
    const verify::EquivalenceReport report = checkAgainst(program, form);
    EXPECT_TRUE(report.equivalent) << report.mismatch;
    EXPECT_EQ(report.level, verify::VerificationLevel::FiniteField) << report.levelReason;
  }
  EXPECT_TRUE(safe);
}

// The search emits schedules of safe forms only: every form of an unsafe attention whose exp
// is not shifted by its row max (the original, and its division moved past the matmul) is
// dropped, and what is left is not empty. A program with nothing to make safe keeps every form.
TEST(ProgramForms, OnlyNumericallySafeFormsAreSearched) {
  const graph::Program unsafe = parse(
      "input Q f16 [2, 8, 4]\n"
      "input K f16 [2, 4, 16]\n"
      "input V f16 [2, 16, 4]\n"
      "E = exp(matmul(rms_norm(Q, dim=2), rms_norm(K, dim=1)))\n"
      "O = matmul(div(E, reduce_sum(E, dim=2)), V)\n"
      "output O\n");
  ASSERT_EQ(unshiftedExps(unsafe), 1);
  const std::vector<ProgramForm> all = programForms(unsafe, 8);
  const std::vector<ProgramForm> safe = numericallySafeForms(all);
  ASSERT_FALSE(safe.empty());
  EXPECT_LT(safe.size(), all.size());
  for (const ProgramForm& form : safe) {
    EXPECT_EQ(unshiftedExps(form.program), 0) << graph::programToText(form.program);
    EXPECT_NE(std::find(form.rulesApplied.begin(), form.rulesApplied.end(), "safe_softmax"),
              form.rulesApplied.end());
  }
  const graph::Program plain = parse(
      "input X f16 [8, 16]\ninput W f16 [16, 4]\nY = matmul(rms_norm(X, dim=1), W)\noutput Y\n");
  EXPECT_EQ(unshiftedExps(plain), 0);
  EXPECT_EQ(numericallySafeForms(programForms(plain, 8)).size(), programForms(plain, 8).size());
}

TEST(ProgramForms, SafeSoftmaxLeavesExpsThatAreNotOnlyASoftmaxAlone) {
  // exp also read by a matmul without the division, exp normalized over two different dims,
  // and exp an output: no one max cancels everywhere.
  for (const char* text : {
           "input A f16 [8, 16]\ninput V f16 [16, 4]\nE = exp(A)\n"
           "O = add(matmul(div(E, reduce_sum(E, dim=1)), V), matmul(E, V))\noutput O\n",
           "input A f16 [8, 16]\nE = exp(A)\n"
           "O = add(div(E, reduce_sum(E, dim=0)), div(E, reduce_sum(E, dim=1)))\noutput O\n",
           "input A f16 [8, 16]\nE = exp(A)\nP = div(E, reduce_sum(E, dim=1))\n"
           "output P\noutput E\n",
       }) {
    for (const ProgramForm& form : programForms(parse(text), 8)) {
      for (const std::string& rule : form.rulesApplied) EXPECT_NE(rule, "safe_softmax") << text;
    }
  }
}

TEST(ProgramForms, DivisorThatVariesAlongTheContractedDimIsNotMoved) {
  // matmul(E / D, V) != matmul(E, V) / D when D changes along the contracted dim; the
  // verifier confirms the tempting rewrite is wrong, and the rule must not make it.
  const graph::Program program = parse(
      "input E f16 [8, 16]\n"
      "input D f16 [8, 16]\n"
      "input V f16 [16, 4]\n"
      "O = matmul(div(E, D), V)\n"
      "output O\n");
  EXPECT_EQ(programForms(program, 8).size(), 1u);
  const graph::Program wrong = parse(
      "input E f16 [8, 16]\n"
      "input D f16 [8, 16]\n"
      "input V f16 [16, 4]\n"
      "N = matmul(E, V)\n"
      "Dsum = reduce_sum(D, dim=1)\n"
      "O = div(N, Dsum)\n"
      "output O\n");
  EXPECT_FALSE(verify::checkEquivalence(program, wrong, {}).equivalent);
}

TEST(ProgramForms, RulesLeaveProgramsWithoutTheirPatternAlone) {
  // A division feeding the matmul's second operand (its divisor varies along the contracted
  // dim there), an rms_norm over a dim other than the last, and a plain GEMM.
  for (const char* text : {
           "input E f16 [16, 8]\ninput S f16 [16, 1]\ninput Q f16 [4, 16]\n"
           "O = matmul(Q, div(E, S))\noutput O\n",
           "input X f16 [16, 4]\ninput W f16 [4, 8]\n"
           "Y = matmul(rms_norm(X, dim=0), W)\noutput Y\n",
           "input A f16 [8, 8]\ninput B f16 [8, 8]\nC = matmul(A, B)\noutput C\n",
       }) {
    EXPECT_EQ(programForms(parse(text), 8).size(), 1u) << text;
  }
}

// Two independent sites (the softmax already safe): breadth-first gives each rule alone, then
// both; applying them in the other order reaches the same program, which is kept once.
const char* const kTwoSites =
    "input Q f16 [8, 4]\n"
    "input K f16 [4, 16]\n"
    "input V f16 [16, 4]\n"
    "input X f16 [8, 16]\n"
    "input W f16 [16, 4]\n"
    "A = matmul(Q, K)\n"
    "E = exp(sub(A, reduce_max(A, dim=1)))\n"
    "O = matmul(div(E, reduce_sum(E, dim=1)), V)\n"
    "Y = matmul(rms_norm(X, dim=1), W)\n"
    "output O\n"
    "output Y\n";

TEST(ProgramForms, BreadthFirstOverTwoSitesKeepsEachDistinctFormOnce) {
  const graph::Program program = parse(kTwoSites);
  const std::vector<ProgramForm> forms = programForms(program, 16);
  ASSERT_EQ(forms.size(), 4u);
  EXPECT_EQ(forms[0].rulesApplied, Rules{});
  EXPECT_EQ(forms[1].rulesApplied, Rules{"div_past_matmul"});
  EXPECT_EQ(forms[2].rulesApplied, Rules{"rms_norm_past_matmul"});
  EXPECT_EQ(forms[3].rulesApplied, (Rules{"div_past_matmul", "rms_norm_past_matmul"}));
  std::set<uint64_t> hashes;
  for (const ProgramForm& form : forms) {
    EXPECT_TRUE(hashes.insert(graph::programHash(form.program)).second);
  }
  for (size_t i = 1; i < forms.size(); ++i) {
    const verify::EquivalenceReport report = checkAgainst(program, forms[i]);
    EXPECT_TRUE(report.equivalent) << "form " << i << ": " << report.mismatch;
  }
}

TEST(ProgramForms, MaxFormsCapsTheEnumerationInBreadthFirstOrder) {
  const graph::Program program = parse(kTwoSites);
  const std::vector<ProgramForm> all = programForms(program, 16);
  for (int cap = 1; cap <= 4; ++cap) {
    const std::vector<ProgramForm> some = programForms(program, cap);
    ASSERT_EQ(some.size(), static_cast<size_t>(cap));
    for (int i = 0; i < cap; ++i) {
      EXPECT_EQ(some[i].program, all[i].program) << "cap " << cap << ", form " << i;
    }
  }
}

TEST(ProgramForms, SameProgramGivesTheSameFormsEveryTime) {
  const graph::Program program = parse(kTwoSites);
  const std::vector<ProgramForm> first = programForms(program, 16);
  const std::vector<ProgramForm> second = programForms(program, 16);
  ASSERT_EQ(first.size(), second.size());
  for (size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(first[i].program, second[i].program);
    EXPECT_EQ(first[i].rulesApplied, second[i].rulesApplied);
  }
}

// A Llama norm as the FX front end writes it, read by Q, K and V.
const char* const kNormQkv =
    "program norm_qkv\n"
    "input x f16 [2, 64]\n"
    "input g f16 [1, 64]\n"
    "input wq f16 [64, 64] layout=transposed\n"
    "input wk f16 [64, 16] layout=transposed\n"
    "input wv f16 [64, 16] layout=transposed\n"
    "t0 = square(x)\n"
    "t1 = reduce_sum(t0, dim=1)\n"
    "t2 = scale(t1, c=0.015625)\n"
    "t3 = add_scalar(t2, c=1e-06)\n"
    "t4 = sqrt(t3)\n"
    "t5 = div(x, t4)\n"
    "t6 = mul(g, t5)\n"
    "q = matmul(t6, wq)\n"
    "k = matmul(t6, wk)\n"
    "v = matmul(t6, wv)\n"
    "output q\n"
    "output k\n"
    "output v\n";

TEST(RecomputedPrologues, EachMatmulAfterTheFirstReadsItsOwnCopyOfTheNorm) {
  const graph::Program program = parse(kNormQkv);
  const std::optional<graph::Program> recomputed = recomputedPrologues(program);
  ASSERT_TRUE(recomputed.has_value());
  // The norm's seven ops three times, and the three matmuls.
  EXPECT_EQ(recomputed->ops.size(), 3u * 7 + 3);
  std::set<graph::TensorId> leftOperands;
  for (const graph::KernelOp& op : recomputed->ops) {
    if (op.kind == graph::OpKind::Matmul) leftOperands.insert(op.inputs[0]);
  }
  EXPECT_EQ(leftOperands.size(), 3u);
  EXPECT_EQ(recomputed->inputs.size(), program.inputs.size());
  ASSERT_EQ(recomputed->outputs.size(), 3u);
  for (size_t o = 0; o < 3; ++o) {
    EXPECT_EQ(recomputed->tensors[recomputed->outputs[o]].name,
              program.tensors[program.outputs[o]].name);
  }
  verify::EquivalenceOptions options;
  options.seed = 5;
  EXPECT_TRUE(verify::checkEquivalence(program, *recomputed, options).equivalent);
  // Nothing is shared any more: a second pass changes nothing.
  EXPECT_FALSE(recomputedPrologues(*recomputed).has_value());
}

TEST(RecomputedPrologues, SharedMatmulResultsAndOneReaderAreLeftAlone) {
  // One matmul reading the norm: nothing to copy.
  EXPECT_FALSE(recomputedPrologues(parse(kRmsNormMatmul)).has_value());
  // Two matmuls reading a matmul's result: that is computed once (its cone stops there).
  EXPECT_FALSE(recomputedPrologues(parse("program two_readers\n"
                                         "input X f16 [4, 16]\n"
                                         "input W f16 [16, 16]\n"
                                         "input A f16 [16, 8]\n"
                                         "input B f16 [16, 8]\n"
                                         "H = matmul(X, W)\n"
                                         "Y = matmul(H, A)\n"
                                         "Z = matmul(H, B)\n"
                                         "output Y\n"
                                         "output Z\n"))
                   .has_value());
  // A shared value that is also a program output, or read by something other than a matmul's
  // left operand, is left alone.
  EXPECT_FALSE(recomputedPrologues(parse("program output_too\n"
                                         "input X f16 [4, 16]\n"
                                         "input A f16 [16, 8]\n"
                                         "input B f16 [16, 8]\n"
                                         "N = square(X)\n"
                                         "Y = matmul(N, A)\n"
                                         "Z = matmul(N, B)\n"
                                         "output N\n"
                                         "output Y\n"
                                         "output Z\n"))
                   .has_value());
}

TEST(RecomputedPrologues, ACopyStopsAtMatmulResultsAndKeepsTheirSingleKernel) {
  // The residual after o_proj feeds a norm read by gate and up: the copy recomputes the add and
  // the norm, never o_proj.
  const graph::Program program = parse(
      "program residual_norm_mlp\n"
      "input a f16 [2, 32]\n"
      "input r f16 [2, 32]\n"
      "input wo f16 [32, 32]\n"
      "input wg f16 [32, 64]\n"
      "input wu f16 [32, 64]\n"
      "o = matmul(a, wo)\n"
      "h = add(r, o)\n"
      "n = rms_norm(h, dim=1)\n"
      "gate = matmul(n, wg)\n"
      "up = matmul(n, wu)\n"
      "y = mul(gate, up)\n"
      "output h\n"
      "output y\n");
  const std::optional<graph::Program> recomputed = recomputedPrologues(program);
  ASSERT_TRUE(recomputed.has_value());
  int matmuls = 0, adds = 0, norms = 0;
  for (const graph::KernelOp& op : recomputed->ops) {
    matmuls += op.kind == graph::OpKind::Matmul;
    adds += op.kind == graph::OpKind::Add;
    norms += op.kind == graph::OpKind::RmsNorm;
  }
  EXPECT_EQ(matmuls, 3);
  EXPECT_EQ(adds, 2);
  EXPECT_EQ(norms, 2);
  verify::EquivalenceOptions options;
  options.seed = 9;
  EXPECT_TRUE(verify::checkEquivalence(program, *recomputed, options).equivalent);
}

}  // namespace
}  // namespace mugraph::search
