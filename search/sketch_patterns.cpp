#include "search/sketch_patterns.h"

#include <algorithm>

#include "graph/cuda_limits.h"
#include "graph/ir.h"

namespace mugraph::search::sketch {
namespace {

// The single variable of a dim, -1 for a size-1 dim, -2 for a composite one.
int soleVar(const DimLabel& label) {
  if (label.empty()) return -1;
  return label.size() == 1 ? label[0] : -2;
}

}  // namespace

std::optional<MatmulVars> matmulVars(const Dataflow& flow, int op) {
  const FlowOp& matmul = flow.ops[op];
  if (matmul.kind != graph::OpKind::Matmul || matmul.reducedVars.size() != 1) return std::nullopt;
  const std::vector<DimLabel>& dims = flow.tensors[matmul.output].dims;
  const int rank = static_cast<int>(dims.size());
  if (rank < 2) return std::nullopt;
  MatmulVars vars;
  vars.op = op;
  vars.k = matmul.reducedVars[0];
  vars.m = soleVar(dims[rank - 2]);
  vars.n = soleVar(dims[rank - 1]);
  if (vars.m == -2 || vars.n < 0) return std::nullopt;  // one row is m = -1 (decode's query)
  for (int d = 0; d < rank - 2; ++d) {
    const int v = soleVar(dims[d]);
    if (v == -2) return std::nullopt;
    if (v >= 0) vars.batch.push_back(v);
  }
  return vars;
}

std::optional<AttentionVars> attentionVars(const Dataflow& flow, const Segment& segment) {
  std::vector<MatmulVars> matmuls;
  for (int i = segment.first; i <= segment.last; ++i) {
    if (flow.ops[i].kind != graph::OpKind::Matmul) continue;
    std::optional<MatmulVars> vars = matmulVars(flow, i);
    if (!vars) return std::nullopt;
    matmuls.push_back(*vars);
  }
  if (matmuls.size() != 2 || matmuls[1].k != matmuls[0].n) return std::nullopt;
  return AttentionVars{matmuls[0], matmuls[1]};
}

std::optional<GridSplit> tiled(const Dataflow& flow, int var, int64_t tile) {
  if (var < 0) return std::nullopt;  // a dim of one
  const int64_t extent = flow.vars[var].extent;
  if (tile >= extent) return std::nullopt;
  const int64_t count = (extent + tile - 1) / tile;
  return GridSplit{var, count, extent % tile == 0 ? 0 : tile};
}

std::vector<GridSplit> oneBlockPerBatch(const Dataflow& flow, const Segment& segment,
                                        const std::vector<int>& batch) {
  const std::vector<int> parallel = parallelVars(flow, segment);
  std::vector<GridSplit> grid;
  for (int v : batch) {
    const int64_t extent = flow.vars[v].extent;
    if (extent > 1 && std::find(parallel.begin(), parallel.end(), v) != parallel.end()) {
      grid.push_back(GridSplit{v, extent, 0});
    }
  }
  return grid;
}

std::optional<BlockChoice> withGrid(std::vector<GridSplit> grid) {
  if (grid.size() > static_cast<size_t>(graph::kGridAxes)) return std::nullopt;
  std::sort(grid.begin(), grid.end(),
            [](const GridSplit& a, const GridSplit& b) { return a.var < b.var; });
  for (size_t a = 0; a < grid.size(); ++a) {
    if (grid[a].count > graph::maxGridExtent(static_cast<int>(a))) return std::nullopt;
  }
  BlockChoice choice;
  choice.grid = std::move(grid);
  choice.generic = false;
  return choice;
}

bool loopInTiles(const Dataflow& flow, BlockChoice& choice, int var, int64_t tile) {
  const int64_t extent = flow.vars[var].extent;
  const int64_t trip = (extent + tile - 1) / tile;
  if (trip < 2) return false;
  choice.loopVar = var;
  choice.forloop = trip;
  choice.loopTile = extent % tile == 0 ? 0 : tile;
  return true;
}

}  // namespace mugraph::search::sketch
