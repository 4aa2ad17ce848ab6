// Algebraic rewrites of a program, kept as one table of rules. The search enumerates schedules
// of every form reachable from the program by these rules: a softmax's division moved past
// the matmul that follows it (so the whole attention becomes a sum the for-loop or the grid
// can split), rms_norm before a matmul expanded into a sum of squares applied after it, and a
// softmax written without max subtraction given it (exp(A − max A): no exp overflows where the
// softmax is finite). recomputedPrologues is a rewrite of its own (not a rule of the table).
// Every rule is an identity of real arithmetic; the verifier still checks each schedule.
#pragma once

#include <string>
#include <vector>

#include "graph/ir.h"

namespace mugraph::search {

struct ProgramForm {
  graph::Program program;
  std::vector<std::string> rulesApplied;  // in application order; empty for the original
};

struct RewriteRule {
  const char* name;
  const char* identity;  // the equation, for documentation and reports
};
const std::vector<RewriteRule>& rewriteRules();

// The original program first, then every distinct form (by program hash) reachable by the
// rules, breadth-first, at most `maxForms` in all (the original is always there, even when
// maxForms < 1). Deterministic. With `mergeEqualOps`, an op a rule emits that computes what
// another op already does is merged with it (the statistics of one norm expanded before each
// of two matmuls are computed once, so both matmuls can share them in one kernel); without it,
// a value the program computes more than once on purpose (recomputedPrologues) stays so.
std::vector<ProgramForm> programForms(const graph::Program& program, int maxForms,
                                      bool mergeEqualOps = true);

// The program with every value that several matmuls read as their left operand (a norm
// before Q, K and V; before gate and up), computed from program inputs and matmul results by
// at most 16 cheap ops (no matmul), computed once per matmul: each matmul after the first
// reads its own copy of those ops. Nothing where no value is so shared. The same function,
// computed more than once. The search gives each op to one kernel, so a shared value is a
// kernel of its own (a one-block norm at decode) stored for the matmuls to read; in this
// form each matmul's kernel can compute its prologue itself as its blocks load its operand.
// superoptimize searches it beside the program (superoptimize.h).
std::optional<graph::Program> recomputedPrologues(const graph::Program& program);

// How many of the program's exps read something other than x − reduce_max(x) (an exp that can
// overflow where a softmax over it is finite).
int unshiftedExps(const graph::Program& program);

// The forms a search may emit schedules of: those with the fewest unshifted exps. The
// safe_softmax rule is an exact identity, so a softmax written without max subtraction is
// searched in its safe form only, and its unsafe forms (the original and those the other rules
// reach from it) are never emitted.
std::vector<ProgramForm> numericallySafeForms(std::vector<ProgramForm> forms);

}  // namespace mugraph::search
