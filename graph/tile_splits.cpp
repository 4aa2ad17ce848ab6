#include "graph/tile_splits.h"

#include <algorithm>
#include <string_view>

#include "graph/shape_inference.h"

namespace mugraph::graph {
namespace {

int64_t ceilDiv(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

std::string dimText(int dim, const std::string& name, int64_t n) {
  return "dim " + std::to_string(dim) + " of '" + name + "' (size " + std::to_string(n) + ")";
}

// The cut of a device dim of n elements into `parts` blocks and `iterations` tiles, with the
// declared tile (0: ⌈n/parts⌉, then ⌈part/iterations⌉); `what` names the dim in errors.
DimSplit cutDim(int64_t n, int gridAxis, int64_t parts, bool loop, int64_t iterations,
                int64_t declared, const std::string& what) {
  DimSplit split;
  split.extent = n;
  split.gridAxis = gridAxis;
  split.gridParts = gridAxis == kReplicated ? 1 : parts;
  split.loop = loop;
  if (declared > 0) {
    split.tile = declared;
    split.blockTile = loop ? iterations * declared : declared;
    if (gridAxis == kReplicated && !loop) {
      if (declared != n) {
        throw ShapeError("tile " + std::to_string(declared) + " of uncut " + what +
                         " must be the whole dim");
      }
      split.blockTile = n;
      return split;
    }
    if (gridAxis == kReplicated) {
      if (split.blockTile < n) {
        throw ShapeError("tile " + std::to_string(declared) + " of " + what + " needs " +
                         std::to_string(ceilDiv(n, declared)) + " iterations, but forloop is " +
                         std::to_string(iterations));
      }
      split.blockTile = n;
    }
    // Cut by both, the parts past the elements are empty (above); otherwise every part holds
    // some.
    const int64_t needs = ceilDiv(n, split.blockTile);
    if (gridAxis != kReplicated && (loop ? needs > parts : needs != parts)) {
      throw ShapeError("tile " + std::to_string(declared) + " of " + what + " needs " +
                       std::to_string(needs) + " parts, but grid." + gridAxisName(gridAxis) +
                       " is " + std::to_string(parts));
    }
    if (gridAxis != kReplicated && loop) return split;
  } else {
    split.blockTile = ceilDiv(n, parts);
    split.tile = ceilDiv(split.blockTile, iterations);
  }
  // Every part, and every iteration of the last (smallest) part, holds a real element.
  const int64_t lastPart = n - (parts - 1) * split.blockTile;
  if (lastPart <= 0) {
    throw ShapeError("grid." + std::string(gridAxisName(gridAxis)) + "=" + std::to_string(parts) +
                     " leaves the last part of " + what + " empty (parts of " +
                     std::to_string(split.blockTile) + ")");
  }
  // Iterations past the last part's end are empty and skipped; the first part, and a loop
  // that cuts the whole dim, must fill them all.
  const int64_t mustFill = gridAxis == kReplicated ? lastPart : split.blockTile;
  if (loop && std::min(mustFill, split.blockTile) <= (iterations - 1) * split.tile) {
    throw ShapeError("forloop=" + std::to_string(iterations) + " leaves the last iteration over " +
                     what + " empty (tiles of " + std::to_string(split.tile) + ", part of " +
                     std::to_string(std::min(mustFill, split.blockTile)) + ")");
  }
  return split;
}

// The cut of a dim combining two operands' dims of shapes na, nb: broadcast takes the other,
// equal dims must be cut alike when either is partial.
DimSplit combineDims(const DimSplit& a, const DimSplit& b, int64_t na, int64_t nb, int dim,
                     std::string_view what) {
  if (na == 1 && nb != 1) return b;
  if (nb == 1 && na != 1) return a;
  if (a != b && (a.partial() || b.partial())) {
    throw ShapeError(std::string(what) + " dim " + std::to_string(dim) +
                     " is cut differently in its operands (" + splitText(a) + " and " +
                     splitText(b) + "): partial tiles must line up");
  }
  return b.partial() ? b : a;
}

}  // namespace

bool DimSplit::partial() const {
  if (dynamicDim != kStaticDim) return true;
  return parts() * blockTile != extent || (loop && iterations() * tile != blockTile);
}

int64_t DimSplit::parts() const {
  return gridAxis == kReplicated ? 1 : gridParts;
}

int64_t DimSplit::realParts() const {
  return gridAxis == kReplicated ? 1 : std::min(gridParts, ceilDiv(extent, blockTile));
}

int64_t DimSplit::iterations() const {
  return loop ? ceilDiv(blockTile, tile) : 1;
}

int64_t DimSplit::start(int64_t part, int64_t iteration) const {
  return (gridAxis == kReplicated ? 0 : part * blockTile) + (loop ? iteration * tile : 0);
}

int64_t DimSplit::realExtent(int64_t part, int64_t iteration) const {
  const int64_t start = this->start(part, iteration);
  const int64_t partEnd =
      gridAxis == kReplicated ? extent : std::min(extent, (part + 1) * blockTile);
  return std::max<int64_t>(0, std::min(tile, partEnd - start));
}

int64_t DimSplit::iterationsIn(int64_t part) const {
  if (!loop) return 1;
  const int64_t start = gridAxis == kReplicated ? 0 : part * blockTile;
  const int64_t end = gridAxis == kReplicated ? extent : std::min(extent, (part + 1) * blockTile);
  if (end <= start) return 0;
  return std::min(iterations(), ceilDiv(end - start, tile));
}

bool DimSplit::hasEmptyIterations() const {
  if (!loop) return false;
  if (partFollowsLength()) return true;
  return realParts() < parts() || iterationsIn(parts() - 1) < iterations();
}

int64_t DimSplit::lastTile() const {
  return realExtent(realParts() - 1, iterationsIn(realParts() - 1) - 1);
}

DimSplit wholeDim(int64_t extent) {
  DimSplit split;
  split.extent = split.blockTile = split.tile = extent;
  return split;
}

std::string splitText(const DimSplit& split) {
  std::string text = std::to_string(split.extent) + " in tiles of " + std::to_string(split.tile);
  if (split.partial()) text += ", the last " + std::to_string(split.lastTile());
  return text;
}

TileSplit inputSplit(const Dims& source, const std::string& sourceName, const BlockGraph& block,
                     const BlockOp& input) {
  const int rank = static_cast<int>(source.size());
  std::vector<int> axisOf(rank, kReplicated);
  for (int axis = 0; axis < kGridAxes; ++axis) {
    const int dim = input.imap[axis];
    const std::string field = std::string("imap.") + gridAxisName(axis);
    // A grid axis of 1 cuts a dim only into one declared (possibly partial) tile: how a
    // dynamic dim keeps its cut at lengths that need one part (graph/dynamic_dims.h).
    if (block.grid[axis] == 1 && dim != kReplicated && input.tile.empty()) {
      throw ShapeError(field + " maps dim " + std::to_string(dim) + " of '" + sourceName +
                       "' but grid." + gridAxisName(axis) + " is 1 (use -1)");
    }
    if (dim == kReplicated) continue;
    if (dim < 0 || dim >= rank) {
      throw ShapeError(field + "=" + std::to_string(dim) + " is not a dim of '" + sourceName +
                       "' (rank " + std::to_string(rank) + ")");
    }
    if (axisOf[dim] != kReplicated) {
      throw ShapeError(field + " maps dim " + std::to_string(dim) + " of '" + sourceName +
                       "', which another grid axis already splits");
    }
    axisOf[dim] = axis;
  }
  const bool looped = input.fmap != kReplicated && (block.forloop > 1 || !input.tile.empty());
  if (block.forloop == 1 && input.fmap != kReplicated && input.tile.empty()) {
    throw ShapeError("fmap maps dim " + std::to_string(input.fmap) + " of '" + sourceName +
                     "' but forloop is 1 (use -1)");
  }
  if (looped && (input.fmap < 0 || input.fmap >= rank)) {
    throw ShapeError("fmap=" + std::to_string(input.fmap) + " is not a dim of '" + sourceName +
                     "' (rank " + std::to_string(rank) + ")");
  }
  if (!input.tile.empty() && static_cast<int>(input.tile.size()) != rank) {
    throw ShapeError("tile " + formatDims(input.tile) + " has rank " +
                     std::to_string(input.tile.size()) + " but '" + sourceName + "' has rank " +
                     std::to_string(rank));
  }
  TileSplit split(rank);
  for (int d = 0; d < rank; ++d) {
    const int axis = axisOf[d];
    const bool loop = looped && input.fmap == d;
    const int64_t declared = input.tile.empty() ? 0 : input.tile[d];
    if (!input.tile.empty() && declared < 1) {
      throw ShapeError("tile " + formatDims(input.tile) + " has a dim below 1");
    }
    split[d] = cutDim(source[d], axis, axis == kReplicated ? 1 : block.grid[axis], loop,
                      loop ? block.forloop : 1, declared, dimText(d, sourceName, source[d]));
  }
  return split;
}

TileSplit resultSplit(OpKind kind, const OpAttrs& attrs, const std::vector<const TileSplit*>& in,
                      const std::vector<const Dims*>& shapes, const Dims& resultShape) {
  const OpInfo& info = opInfo(kind);
  const TileSplit& first = *in.at(0);
  const Dims& firstShape = *shapes.at(0);
  switch (info.opClass) {
    case OpClass::Unary:
      return first;
    case OpClass::Binary: {
      TileSplit out(resultShape.size());
      for (size_t d = 0; d < out.size(); ++d) {
        out[d] = combineDims(first[d], (*in[1])[d], firstShape[d], (*shapes[1])[d],
                             static_cast<int>(d), info.name);
      }
      return out;
    }
    case OpClass::Matmul: {
      const size_t rank = resultShape.size();
      TileSplit out(rank);
      const TileSplit& b = *in[1];
      for (size_t d = 0; d + 2 < rank; ++d) {
        out[d] = combineDims(first[d], b[d], firstShape[d], (*shapes[1])[d], static_cast<int>(d),
                             info.name);
      }
      combineDims(first[rank - 1], b[rank - 2], 0, 0, static_cast<int>(rank - 1),
                  "matmul's contracted");
      out[rank - 2] = first[rank - 2];
      out[rank - 1] = b[rank - 1];
      return out;
    }
    case OpClass::Reduction: {
      TileSplit out = first;
      if (keepsShape(kind)) return out;
      const DimSplit& reduced = first.at(attrs.dim);
      if (reduced.partial() && kind == OpKind::ReduceSum && attrs.to > 1) {
        throw ShapeError("reduce_sum(to=" + std::to_string(attrs.to) + ") over partial dim " +
                         std::to_string(attrs.dim) + " (" + splitText(reduced) +
                         "): only to=1 sums a partial dim");
      }
      out[attrs.dim] = wholeDim(resultShape.at(attrs.dim));
      return out;
    }
    case OpClass::Accumulator: {
      TileSplit out = first;
      for (size_t d = 0; d < out.size(); ++d) {
        if (!out[d].loop) continue;
        if (out[d].partial()) {
          throw ShapeError(std::string(info.name) + " accumulates a tile whose dim " +
                           std::to_string(d) + " is cut by the for-loop with a partial last " +
                           "iteration (" + splitText(out[d]) + ")");
        }
        out[d] = wholeDim(firstShape[d]);
      }
      return out;
    }
    default:
      break;
  }
  throw ShapeError(std::string(info.name) + " has no tile split");
}

std::vector<TileSplit> blockTileSplits(
    const BlockGraph& block, const std::vector<Dims>& kernelInputs,
    const std::vector<std::vector<int>>* kernelInputDynamicDims) {
  std::vector<TileSplit> splits(block.tensors.size());
  for (const BlockOp& op : block.ops) {
    if (op.kind == OpKind::Output) continue;
    if (op.kind == OpKind::Input) {
      TileSplit& split = splits.at(op.output);
      split = inputSplit(kernelInputs.at(op.kernelTensor), "", block, op);
      if (!kernelInputDynamicDims) continue;
      const std::vector<int>& dynamic = kernelInputDynamicDims->at(op.kernelTensor);
      for (size_t d = 0; d < dynamic.size() && d < split.size(); ++d)
        split[d].dynamicDim = dynamic[d];
      continue;
    }
    std::vector<const TileSplit*> in;
    std::vector<const Dims*> shapes;
    for (TensorId t : op.inputs) {
      in.push_back(&splits.at(t));
      shapes.push_back(&block.tensors.at(t).shape);
    }
    splits.at(op.output) =
        resultSplit(op.kind, op.attrs, in, shapes, block.tensors.at(op.output).shape);
  }
  return splits;
}

std::optional<DimSplit> shortenedLoop(const std::vector<TileSplit>& splits) {
  for (const TileSplit& tile : splits) {
    for (const DimSplit& d : tile) {
      if (d.hasEmptyIterations()) return d;
    }
  }
  return std::nullopt;
}

bool hasPartialTiles(const std::vector<TileSplit>& splits) {
  for (const TileSplit& tile : splits) {
    for (const DimSplit& d : tile) {
      if (d.partial()) return true;
    }
  }
  return false;
}

}  // namespace mugraph::graph
