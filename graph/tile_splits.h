// How each dim of each block-graph tile walks the device dim it was cut from, and the rules
// of partial tiles (DESIGN.md, "Parts need not divide"). A dim of n elements split into g
// parts along a grid axis gives each block a part of t1 = ⌈n/g⌉ elements; a for-loop of F
// iterations cuts the part into tiles of t2 = ⌈t1/F⌉. An input may instead declare its tile
// (`BlockOp::tile`, e.g. 128 for n = 1030): then t2 is the declared size, t1 = F·t2, and the
// split must need exactly g parts (⌈n/t1⌉ = g). Either way the last part is partial, its
// elements past n do not exist, and every part holds at least one element. Where a dim is cut
// by both the grid and the loop, the last part may need fewer iterations than the loop has:
// the iterations past its end are empty and the block skips them (no op runs, accumulators
// keep their value); every loop-cut dim of the block is then cut alike, so its blocks agree
// on their iteration counts. With a declared tile, a dim cut by both may also leave its last
// parts empty (fewer than g parts hold elements: split-KV with a fixed number of parts at a
// length that needs fewer, graph/dynamic_dims.h): such a block runs no iteration, and its
// accumulators hold their identities (sums 0, max −inf) for the ops after the loop. With a declared tile, a grid axis of 1 (or a loop of 1) may still
// cut a dim into one part (iteration), partial where the dim is shorter than the tile: a
// dynamic dim keeps its cut at every length that way (graph/dynamic_dims.h).
//
// The cut of a tile dim follows it through the block graph: element-wise ops, matmul's rows
// and columns and accumulators keep it; a reduction ends it. Operands combined along a dim
// (broadcast partners, matmul's contraction) must be cut alike when either is partial, so
// the real extents agree in every block and iteration; an accumulated tile may not be partial
// along a for-loop dim; an output is written along its grid-cut dims up to n.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "graph/ir.h"

namespace mugraph::graph {

struct DimSplit {
  int64_t extent = 1;          // n: elements of the device dim (or of the tile, if not cut)
  int gridAxis = kReplicated;  // the grid axis cutting it into parts, or kReplicated
  int64_t blockTile = 1;       // t1: elements between consecutive blocks' parts
  int64_t gridParts = 1;       // g: blocks along gridAxis (some may be empty, above)
  bool loop = false;           // the for-loop cuts the part into iterations
  int64_t tile = 1;            // t2: the tile (elements between consecutive iterations)
  // The dynamic dim whose length `extent` is at the reference (graph/dynamic_dims.h), where
  // the caller of blockTileSplits gave the records: a kernel that takes the length treats the
  // cut as partial, since some lengths make it so.
  int dynamicDim = kStaticDim;

  bool partial() const;  // some block or iteration sees fewer than `tile` real elements
  // A dynamic dim cut by both the grid and the loop: the parts are fixed, the trips follow the
  // length, and so does blockTile (trips · tile) in a kernel that takes the lengths.
  bool partFollowsLength() const {
    return dynamicDim != kStaticDim && gridAxis != kReplicated && loop;
  }
  // Position in the device dim of the tile's first element in block part `part` (along
  // gridAxis) at `iteration`.
  int64_t start(int64_t part, int64_t iteration) const;
  // Real elements of the tile in block part `part` (along gridAxis) at `iteration`.
  int64_t realExtent(int64_t part, int64_t iteration) const;
  int64_t parts() const;       // blocks along gridAxis (1 when not grid-cut)
  int64_t realParts() const;   // of them, the parts that hold elements
  int64_t iterations() const;  // iterations along the loop (1 when not loop-cut)
  // Iterations of part `part` that hold real elements (fewer than iterations() only in the
  // last parts of a dim cut by both the grid and the loop; 0 in an empty part).
  int64_t iterationsIn(int64_t part) const;
  // Some part needs fewer iterations than the loop has (always, for a dynamic dim cut by both:
  // its lengths decide).
  bool hasEmptyIterations() const;
  int64_t lastTile() const;  // real elements of the last real part's last real iteration

  bool operator==(const DimSplit&) const = default;
};

using TileSplit = std::vector<DimSplit>;  // one per dim of a tile

// A dim that is not cut: n elements, all of them in the tile.
DimSplit wholeDim(int64_t extent);

// The cut of each dim of input op `input`'s tile of a device tensor of shape `source`
// (ShapeError naming `sourceName` on a split that does not fit).
TileSplit inputSplit(const Dims& source, const std::string& sourceName, const BlockGraph& block,
                     const BlockOp& input);

// The cut of a compute or accumulator op's result from its operands' cuts and shapes
// (ShapeError when partial operands disagree or a partial dim meets a rule above).
TileSplit resultSplit(OpKind kind, const OpAttrs& attrs, const std::vector<const TileSplit*>& in,
                      const std::vector<const Dims*>& shapes, const Dims& resultShape);

// The cut of every tile of `block`, whose kernel inputs have shapes `kernelInputs`, up to its
// first output whose op is not yet there (tiles not yet defined stay empty). With
// `kernelInputDynamicDims` (per kernel input, TensorDesc::dynamicDims) the cuts of dynamic
// dims carry their dim (DimSplit::dynamicDim) through the block graph.
std::vector<TileSplit> blockTileSplits(
    const BlockGraph& block, const std::vector<Dims>& kernelInputs,
    const std::vector<std::vector<int>>* kernelInputDynamicDims = nullptr);

// Whether any tile dim of `block` is partial.
bool hasPartialTiles(const std::vector<TileSplit>& splits);

// The loop cut that gives some block fewer real iterations than the loop has, or nothing
// (then every block runs every iteration).
std::optional<DimSplit> shortenedLoop(const std::vector<TileSplit>& splits);

// Of a loop over key tiles of `kv` columns from column `col0`, the iterations a block of query
// rows first..last needs (at most `loop`): the tiles after them are entirely above the diagonal
// (all -inf, nothing to a safe softmax). The device header's mg::causal_iterations is this
// formula for the kernel; the cost model counts with this one.
inline int64_t causalIterations(int64_t first, int64_t last, int64_t col0, int64_t kv, int64_t cols,
                                int64_t queries, int64_t loop) {
  const int64_t lastQuery = first / queries == last / queries ? last % queries : queries - 1;
  const int64_t lastCol = lastQuery + cols - queries;
  if (lastCol < col0) return 0;
  return std::min(loop, (lastCol - col0) / kv + 1);
}

// "1030 = 8 × 128 + 6": how a partial dim is cut, for messages and `mugraph show`.
std::string splitText(const DimSplit& split);

}  // namespace mugraph::graph
