// Shape and dtype inference for every op, at both levels, plus the tile arithmetic of block
// graphs (imap/fmap splits of inputs, omap placement of outputs). Errors name the op, the
// tensor and the dim; validation adds where in the file it happened.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "graph/ir.h"
#include "graph/tile_splits.h"

namespace mugraph::graph {

class ShapeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Operand {
  const std::string& name;
  DType dtype;
  const Dims& shape;
};

struct Inferred {
  Dims shape;
  DType dtype;
};

// Result of a predefined or block-level compute op (not input/output/block_graph).
// Broadcasting: operands of binary ops have equal rank; a size-1 dim broadcasts.
// matmul: equal rank >= 2, equal batch dims, contracts A's last dim with B's second-last.
// reduce_sum(dim, to=k): dim of size n is viewed as [n/k, k] and summed over the n/k factor.
Inferred inferOp(OpKind kind, const OpAttrs& attrs, const std::vector<Operand>& operands);

// Checks the attributes in isolation (dim in range, to divides, c finite).
void checkAttrs(OpKind kind, const OpAttrs& attrs, const Operand& first);

// The attributes that speak of the whole tensor, for a predefined op (its operand is whole,
// where a block-level op sees a tile): causal_mask's queries divide the rows and are at most
// the keys.
void checkWholeTensorAttrs(OpKind kind, const OpAttrs& attrs, const Operand& first);

// Tile of a device tensor seen by one block in one iteration.
Dims inputTileShape(const Dims& source, const std::string& sourceName, const BlockGraph& block,
                    const BlockOp& input);

// Device tensor written by all blocks together from one output tile; with the tile's cut
// (graph/tile_splits.h) a dim cut along the writing axis is the device dim it came from, so a
// partial last part ends there.
Dims outputDeviceShape(const Dims& tile, const std::string& tileName, const BlockGraph& block,
                       const BlockOp& output, const TileSplit* split = nullptr);

}  // namespace mugraph::graph
