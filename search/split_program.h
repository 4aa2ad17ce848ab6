// Programs larger than one search can cover are cut, in topological order, into pieces the
// search can take whole. A cut is a position in the op order; the tensors produced before it
// and read after it cross the cut and become outputs of one piece and inputs of the next.
// Cuts crossed by few tensors are preferred (a transformer layer's residual stream), so the
// joined schedule moves little extra data through device memory.
#pragma once

#include <vector>

#include "graph/ir.h"
#include "search/search_config.h"

namespace mugraph::search {

// The most program ops one candidate of `config` can cover: each block-graph kernel fuses up
// to maxBlockOps ops, each other kernel computes one predefined op. A program with more ops
// cannot get a candidate from one search.
int maxOpsOneSearch(const SearchConfig& config);

// Ops per piece of a program of `programOps` ops: at most maxBlockOps (one block graph's
// worth, so a piece's search stays small and fusion inside it is still possible), and fewer
// than the program has, so a piece whose own search finds no candidate is split again
// (superoptimize.h) into smaller pieces, down to single ops.
int maxOpsPerPiece(const SearchConfig& config, int programOps);

struct ProgramPiece {
  int firstOp = 0, endOp = 0;  // ops [firstOp, endOp) of the whole program
  // A valid program: inputs are the original inputs and cut tensors it reads (in order of
  // first use), outputs what later pieces or the whole program read. Tensor names are the
  // whole program's.
  graph::Program program;
};

// Cuts `program` into pieces of at most `maxOps` ops each, covering every op exactly once.
std::vector<ProgramPiece> splitProgram(const graph::Program& program, int maxOps);

}  // namespace mugraph::search
