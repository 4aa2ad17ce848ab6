// The search of a program too large for one search: cut it into pieces (split_program.h),
// search each with the same options, and join each piece's best variant into one schedule of
// the whole program, the pieces' kernels in order and the cut tensors device tensors between
// them. The joined schedule is verified against the whole program like every other variant,
// so its reported bound is that of the whole program, not of the pieces.
#pragma once

#include "graph/ir.h"
#include "search/split_program.h"
#include "search/superoptimize.h"

namespace mugraph::search {

// No checkpoints: the pieces' searches are short and a checkpoint names one program. The
// time limit is the whole program's: the pieces run one after another, each with an equal
// share of what is left. Pieces are searched without verifying their variants
// (SearchOptions::verifyVariants): the joined schedule is verified against the whole program,
// and only where that fails is each piece's variant verified on its own, a refuted one
// replaced by its piece's best verified variant, and the join verified again.
// `limits`: how to cut (split_program.h).
// Adds a search's counts (forms, subtrees, states, prunes, candidates, the oracle's queries)
// to `total`'s.
void addUp(SearchSummary& total, const SearchSummary& part);

// A piece whose search the time limit stopped before it had any candidate is searched once
// more with this many times its share of the limit, at least kPieceRetryMinimumSeconds: one
// short share would otherwise leave the whole program without a schedule (a piece whose first
// steps ask Z3 slow questions, session 69: StarCoder2's down projection, residual and
// LayerNorm with a second's share).
inline constexpr double kPieceRetryFactor = 4;
inline constexpr double kPieceRetryMinimumSeconds = 10;

// A dynamic program's pieces keep this many verified variants each, the first equivalent over
// the piece's range joined.
inline constexpr int kDynamicPieceVariants = 8;

// A joined schedule has alternatives for `--profile` and the torch backend to time: each piece
// keeps up to this many variants (its best first), an alternative only where its estimate is within
// kAlternativeCostRatio of its piece's best. Each alternative join swaps one piece's best for one
// of its alternatives (the cheapest swaps first, up to maxVariants joins in all). Its verification
// is by composition: the join of the bests is verified against the whole program; the swapped
// piece's best and its alternative are verified against the piece's own program, so the two joins
// compute the same function. Its bound is the sum of the three bounds. A dynamic program's pieces
// keep kDynamicPieceVariants verified variants, its alternatives are among those ranked after the
// one joined, and every join is checked over the range by the driver, as any variant of a dynamic
// program.
inline constexpr int kPieceAlternatives = 3;
inline constexpr double kAlternativeCostRatio = 1.5;

SearchResult superoptimizeInPieces(const graph::Program& program, const SearchOptions& options,
                                   const PieceLimits& limits);

}  // namespace mugraph::search
