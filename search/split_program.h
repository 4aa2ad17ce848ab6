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

// The kernels ops [first, end) of `program` take when every matmul is a kernel of its own (a
// tiled GEMM: the warpgroup GEMM sketch on sm_90) with the element-wise ops right after it as
// its epilogue (sketches.h: lastGemmEpilogueOp; the kernel is then a block graph), and the
// other ops between them are fused in runs of at most `fusedOps`, and how many of those
// kernels fuse several ops (block graphs).
// A program or piece needing more kernels or block graphs than a search allows has no
// candidate whose every matmul runs alone: some matmul would be fused on the general path or
// left to its default lowering, several times slower for a large GEMM.
struct MatmulsAlone {
  int kernels = 0;
  int fusedRuns = 0;
};
MatmulsAlone kernelsWithMatmulsAlone(const graph::Program& program, int first, int end,
                                     int fusedOps);

// Whether `config` leaves room for every matmul of `program` alone (kernelsWithMatmulsAlone).
bool roomForMatmulsAlone(const graph::Program& program, const SearchConfig& config);

struct ProgramPiece {
  int firstOp = 0, endOp = 0;  // ops [firstOp, endOp) of the whole program
  // A valid program: inputs are the original inputs and cut tensors it reads (in order of
  // first use), outputs what later pieces or the whole program read. Tensor names are the
  // whole program's.
  graph::Program program;
};

// What one piece may hold: ops, and, with every matmul alone and runs of `fusedOps`, at most
// `kernels` kernels (0: any) of which at most `blockGraphs` fuse several ops.
struct PieceLimits {
  int ops = 1;
  int kernels = 0;
  int blockGraphs = 0;
  int fusedOps = 1;
};

// The limits a search of `config` splits a program of `programOps` ops with up front: fewer
// ops than the program, at most maxOpsOneSearch, and room for every matmul alone
// (kernelsWithMatmulsAlone). Cuts then avoid splitting a run of other ops between matmuls.
PieceLimits pieceLimits(const SearchConfig& config, int programOps);

// Cuts `program` into pieces within `limits`, covering every op exactly once. Where even one
// op beyond the piece's first breaks the kernel limit, the piece is that op alone.
std::vector<ProgramPiece> splitProgram(const graph::Program& program, const PieceLimits& limits);
// Pieces of at most `maxOps` ops each.
std::vector<ProgramPiece> splitProgram(const graph::Program& program, int maxOps);

}  // namespace mugraph::search
