#include "graph/shape_inference.h"

#include <cmath>
#include <sstream>

namespace mugraph::graph {
namespace {

std::string callText(OpKind kind, const std::vector<Operand>& operands) {
  std::string text = std::string(opName(kind)) + "(";
  for (size_t i = 0; i < operands.size(); ++i) text += (i ? ", " : "") + operands[i].name;
  return text + ")";
}

[[noreturn]] void fail(OpKind kind, const std::vector<Operand>& operands, const std::string& why) {
  throw ShapeError(callText(kind, operands) + ": " + why);
}

void checkRank(OpKind kind, const std::vector<Operand>& operands) {
  for (const Operand& o : operands) {
    if (o.shape.empty() || static_cast<int>(o.shape.size()) > kMaxRank) {
      fail(kind, operands,
           "'" + o.name + "' has rank " + std::to_string(o.shape.size()) + " (1 to 4 supported)");
    }
  }
}

Inferred inferMatmul(const std::vector<Operand>& ops) {
  const Operand& a = ops[0];
  const Operand& b = ops[1];
  const size_t rank = a.shape.size();
  if (rank < 2 || b.shape.size() != rank) {
    fail(OpKind::Matmul, ops,
         "operands need equal rank >= 2, got " + std::to_string(a.shape.size()) + " and " +
             std::to_string(b.shape.size()));
  }
  for (size_t d = 0; d + 2 < rank; ++d) {
    if (a.shape[d] != b.shape[d]) {
      fail(OpKind::Matmul, ops,
           "batch dim " + std::to_string(d) + " differs: '" + a.name + "' has " +
               std::to_string(a.shape[d]) + ", '" + b.name + "' has " + std::to_string(b.shape[d]));
    }
  }
  if (a.shape[rank - 1] != b.shape[rank - 2]) {
    fail(OpKind::Matmul, ops,
         "contraction dims differ: '" + a.name + "' dim " + std::to_string(rank - 1) + " is " +
             std::to_string(a.shape[rank - 1]) + ", '" + b.name + "' dim " +
             std::to_string(rank - 2) + " is " + std::to_string(b.shape[rank - 2]));
  }
  Dims out = a.shape;
  out[rank - 1] = b.shape[rank - 1];
  return {out, a.dtype};
}

Inferred inferBroadcast(OpKind kind, const std::vector<Operand>& ops) {
  const Operand& a = ops[0];
  const Operand& b = ops[1];
  if (a.shape.size() != b.shape.size()) {
    fail(kind, ops,
         "operands need equal rank, got " + std::to_string(a.shape.size()) + " and " +
             std::to_string(b.shape.size()));
  }
  Dims out(a.shape.size());
  for (size_t d = 0; d < out.size(); ++d) {
    if (a.shape[d] != b.shape[d] && a.shape[d] != 1 && b.shape[d] != 1) {
      fail(kind, ops,
           "dim " + std::to_string(d) + " does not broadcast: '" + a.name + "' has " +
               std::to_string(a.shape[d]) + ", '" + b.name + "' has " + std::to_string(b.shape[d]));
    }
    out[d] = std::max(a.shape[d], b.shape[d]);
  }
  return {out, a.dtype};
}

}  // namespace

void checkAttrs(OpKind kind, const OpAttrs& attrs, const Operand& first) {
  const OpInfo& info = opInfo(kind);
  const std::vector<Operand> ops{first};
  if (info.hasDim) {
    const int rank = static_cast<int>(first.shape.size());
    if (attrs.dim < 0 || attrs.dim >= rank) {
      fail(kind, ops,
           "dim=" + std::to_string(attrs.dim) + " is out of range for rank " +
               std::to_string(rank) + " tensor '" + first.name + "'");
    }
    if (info.hasTo) {
      const int64_t n = first.shape[attrs.dim];
      if (attrs.to < 1 || n % attrs.to != 0) {
        fail(kind, ops,
             "to=" + std::to_string(attrs.to) + " does not divide dim " +
                 std::to_string(attrs.dim) + " of '" + first.name + "' (size " + std::to_string(n) +
                 ")");
      }
    }
  }
  if (info.hasScale && !std::isfinite(attrs.scale)) fail(kind, ops, "c must be a finite number");
  if (info.hasQueries) {
    if (first.shape.size() < 2) fail(kind, ops, "needs a tensor of rank 2 or more (rows, keys)");
    if (attrs.queries < 0) fail(kind, ops, "queries= must be 0 (all rows) or positive");
  }
}

void checkWholeTensorAttrs(OpKind kind, const OpAttrs& attrs, const Operand& first) {
  if (!opInfo(kind).hasQueries || first.shape.size() < 2) return;
  const int64_t rows = first.shape[first.shape.size() - 2];
  const int64_t cols = first.shape.back();
  const int64_t queries = attrs.queries > 0 ? attrs.queries : rows;
  if (rows % queries != 0 || queries > cols) {
    fail(kind, {first},
         "queries=" + std::to_string(queries) + " must divide the " + std::to_string(rows) +
             " rows of '" + first.name + "' and be at most its " + std::to_string(cols) + " keys");
  }
}

Inferred inferOp(OpKind kind, const OpAttrs& attrs, const std::vector<Operand>& operands) {
  const OpInfo& info = opInfo(kind);
  if (info.opClass == OpClass::Io || info.opClass == OpClass::BlockGraph) {
    throw ShapeError(std::string(info.name) + " has no inferred result");
  }
  if (static_cast<int>(operands.size()) != info.arity) {
    fail(kind, operands,
         "takes " + std::to_string(info.arity) + " operand(s), got " +
             std::to_string(operands.size()));
  }
  checkRank(kind, operands);
  for (const Operand& o : operands) {
    if (o.dtype != operands[0].dtype) {
      fail(kind, operands,
           "dtype mismatch: '" + operands[0].name + "' is " +
               std::string(dtypeName(operands[0].dtype)) + ", '" + o.name + "' is " +
               std::string(dtypeName(o.dtype)));
    }
  }
  checkAttrs(kind, attrs, operands[0]);
  switch (info.opClass) {
    case OpClass::Matmul:
      return inferMatmul(operands);
    case OpClass::Binary:
      return inferBroadcast(kind, operands);
    case OpClass::Accumulator:
      if (kind == OpKind::AccumRescaledSum) {
        // The running max broadcasts over the sum: the result keeps the sum's shape.
        const Inferred broadcast = inferBroadcast(kind, operands);
        if (broadcast.shape != operands[0].shape) {
          fail(kind, operands,
               "the max '" + operands[1].name + "' must broadcast to the shape of '" +
                   operands[0].name + "'");
        }
      }
      return {operands[0].shape, operands[0].dtype};
    case OpClass::Unary:
      return {operands[0].shape, operands[0].dtype};
    case OpClass::Reduction: {
      Dims out = operands[0].shape;
      if (isRotation(kind) && out[attrs.dim] % 2 != 0) {
        fail(kind, operands,
             std::string(opName(kind)) + " needs an even dim " + std::to_string(attrs.dim) +
                 " (it is " + std::to_string(out[attrs.dim]) + ")");
      }
      if (!keepsShape(kind)) out[attrs.dim] = kind == OpKind::ReduceSum ? attrs.to : 1;
      return {out, operands[0].dtype};
    }
    default:
      break;
  }
  throw ShapeError(callText(kind, operands) + ": not a compute op");
}

Dims inputTileShape(const Dims& source, const std::string& sourceName, const BlockGraph& block,
                    const BlockOp& input) {
  const TileSplit split = inputSplit(source, sourceName, block, input);
  Dims tile(split.size());
  for (size_t d = 0; d < split.size(); ++d) tile[d] = split[d].tile;
  return tile;
}

Dims outputDeviceShape(const Dims& tile, const std::string& tileName, const BlockGraph& block,
                       const BlockOp& output, const TileSplit* split) {
  const int rank = static_cast<int>(tile.size());
  Dims shape = tile;
  std::vector<bool> used(rank, false);
  for (int axis = 0; axis < kGridAxes; ++axis) {
    const int dim = output.omap[axis];
    const std::string field = std::string("omap.") + gridAxisName(axis);
    const bool oneCutPart = split && dim >= 0 && dim < rank && split->at(dim).gridAxis == axis;
    if (block.grid[axis] == 1 && !oneCutPart) {
      if (dim != kReplicated) {
        throw ShapeError(field + " maps dim " + std::to_string(dim) + " of '" + tileName +
                         "' but grid." + gridAxisName(axis) + " is 1 (use -1)");
      }
      continue;
    }
    if (dim == kReplicated) {
      throw ShapeError("grid." + std::string(gridAxisName(axis)) + "=" +
                       std::to_string(block.grid[axis]) + " has no output dim for '" + tileName +
                       "' (" + field + " is -1; blocks along it would overwrite each other)");
    }
    if (dim < 0 || dim >= rank) {
      throw ShapeError(field + "=" + std::to_string(dim) + " is not a dim of '" + tileName +
                       "' (rank " + std::to_string(rank) + ")");
    }
    if (used[dim]) {
      throw ShapeError(field + " maps dim " + std::to_string(dim) + " of '" + tileName +
                       "', which another grid axis already maps");
    }
    used[dim] = true;
    if (split && split->at(dim).gridAxis == axis) {
      shape[dim] = split->at(dim).extent;  // the last part may be partial
      continue;
    }
    if (split && split->at(dim).partial()) {
      throw ShapeError(field + " maps dim " + std::to_string(dim) + " of '" + tileName +
                       "', which is partial (" + splitText(split->at(dim)) +
                       ") along another axis");
    }
    shape[dim] *= block.grid[axis];
  }
  for (int dim = 0; split && dim < rank; ++dim) {
    if (!used[dim] && split->at(dim).partial()) {
      throw ShapeError("dim " + std::to_string(dim) + " of '" + tileName + "' is partial (" +
                       splitText(split->at(dim)) + ") but no grid axis writes it");
    }
  }
  return shape;
}

}  // namespace mugraph::graph
