// Dynamic dims (issue 28): a dim may be symbolic with a range, `dim s in [1, 65536]`, so one
// program and one schedule serve every length.
//
// The IR stays static. A dynamic tensor dim stores its *reference extent*, the range's max, in
// TensorDesc::shape, and TensorDesc::dynamicDims records which dynamic dim it is. The max is
// chosen because every count a schedule derives from a length (grid parts, loop trips) is
// largest there: the graph as stored is the schedule at its longest length, every static
// function (shape inference, validation, the interpreter) works on it unchanged, and a cut
// that exists at some length exists at the reference. A schedule fixes its tiles: each block
// graph cuts every dynamic dim by the grid or the for-loop with a declared tile
// (BlockOp::tile), and the grid and the trip count follow from the length.
//
// instantiate() is the one definition of what a dynamic program or schedule means at a
// length; the interpreter, the verifier and the CLI evaluate its static result.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "graph/ir.h"

namespace mugraph::graph {

// A concrete length per dynamic dim, by name.
using DimValues = std::map<std::string, int64_t>;

// The dynamic dim (an index into KernelGraph::dims) of `tensor`'s dim `dim`, or kStaticDim.
int dynamicDimOf(const TensorDesc& tensor, int dim);
std::optional<int> findDim(const KernelGraph& graph, std::string_view name);

// Why declaring `name in [min, max]` after `declared` is refused (and which of "name", "min",
// "max" is wrong), or nullopt when it is fine: the one rule the text, JSON and ONNX readers
// share (a clash with a tensor name is validation's).
struct DimProblem {
  std::string field;
  std::string reason;
};
std::optional<DimProblem> dimDeclarationProblem(std::string_view name, int64_t min, int64_t max,
                                                const std::vector<DynamicDim>& declared);

// The dynamic dims of each result of `op`, from its operands' records: a predefined op's
// result dims follow its shape rule (element-wise and accumulators keep them, matmul keeps
// A's rows and B's columns, a reduced dim is static); a block graph's output dim written
// along grid axis a is the dynamic dim its inputs cut along a (by the grid alone: fixed parts
// of a dim the loop cuts too are static), its other dims are static
// (tiles do not change with the length). Empty records where every dim is static.
std::vector<std::vector<int>> resultDynamicDims(const KernelGraph& graph, const KernelOp& op);

// The dims' own rules and every tensor's record, then that each block graph cuts every
// dynamic dim of its inputs with a declared tile. Throws IrError; called by validation.
void validateDynamicDims(const KernelGraph& graph, const std::string& prefix);

DimValues referenceValues(const KernelGraph& graph);  // every dim at its max
std::string dimValuesText(const DimValues& values);   // "s=100, t=7"
// "s=100" (the CLI's --dim): UserError naming `where` when malformed.
std::pair<std::string, int64_t> parseDimValue(std::string_view text, const std::string& where);

// How a block graph cuts a dynamic dim, and the counts it needs at length n: the grid's
// parts and the loop's trips (0 where the cut does not set them). A cut by both keeps the
// schedule's parts and takes ⌈n / (parts · tile)⌉ trips; at lengths that need fewer parts the
// last ones are empty (graph/tile_splits.h).
struct DynamicCut {
  int dim = kStaticDim;        // the dynamic dim
  int gridAxis = kReplicated;  // grid axis cutting it, or kReplicated
  bool loop = false;           // the for-loop cuts it
  int64_t tile = 1;            // the declared tile (of an iteration where the loop cuts)
  int64_t parts = 1;           // the grid's parts where both cut (fixed by the schedule)
};
struct CutCounts {
  int64_t parts = 0;
  int64_t forloop = 0;
};
CutCounts cutCounts(const DynamicCut& cut, int64_t n);
// Every cut of a dynamic dim in block-graph kernel `kernel` of `graph` (cuts without a
// declared tile have tile 0; validation refuses them), and in all of `graph`'s block graphs.
std::vector<DynamicCut> blockDynamicCuts(const KernelGraph& graph, const KernelOp& kernel);
std::vector<DynamicCut> dynamicCuts(const KernelGraph& graph);

// The static graph at `values` (one per dynamic dim, inside its range): dynamic extents set,
// every derived shape re-inferred, each block graph's grid and trip count recomputed from its
// declared tiles, then validated. UserError naming the length and why otherwise.
KernelGraph instantiate(const KernelGraph& graph, const DimValues& values);
Schedule instantiate(const Schedule& schedule, const DimValues& values);

}  // namespace mugraph::graph
