// What a kernel that takes the lengths of dynamic dims as parameters (issue 28) computes from
// them at run time, in one place for the code generator, the manifest and the runtime:
//
// - a DimProduct, a constant times a product of dims: a tensor's strides, element count and
//   bytes follow the lengths this way ([2, 32, s] has strides 32·s, s, 1);
// - a LaunchCount, a constant or ⌈n / tile⌉ of one dim: a kernel's grid along each axis and
//   its for-loop trip count (graph::cutCounts for a cut by the grid or by the loop alone).
//
// Both are written to manifest.json as JSON a client evaluates without mugraph: a product as
// a list of integers and dim names multiplied together (`[2, 32, "s"]`, like a shape; a static
// size stays a plain integer), a count as an integer or `{"ceil_div": ["s", 64]}`. The readers
// here evaluate what the writers here print, so the runtime and the generator cannot disagree.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "graph/dynamic_dims.h"

namespace mugraph::graph {

// coefficient · Π dims (indices into KernelGraph::dims, a dim repeated for its powers); zero
// by default (a step that does not move).
struct DimProduct {
  int64_t coefficient = 0;
  std::vector<int> dims;

  bool isStatic() const { return dims.empty(); }
  DimProduct times(int64_t factor) const { return {coefficient * factor, dims}; }
  DimProduct times(const DimProduct& other) const;
  int64_t at(const KernelGraph& graph, const DimValues& values) const;
  bool operator==(const DimProduct&) const = default;
};

// Each logical dim's element stride in `tensor`'s storage (graph::storageStrides with the
// dynamic extents kept as dims), and its element count.
std::vector<DimProduct> storageStrideProducts(const TensorDesc& tensor);
DimProduct elementProduct(const TensorDesc& tensor);

// A grid extent or trip count: `constant`, or ⌈n / tile⌉ of dynamic dim `dim` at length n.
struct LaunchCount {
  int64_t constant = 1;
  int dim = kStaticDim;
  int64_t tile = 1;

  bool isStatic() const { return dim == kStaticDim; }
  int64_t at(int64_t n) const;  // the count at length n of `dim` (constant when static)
  int64_t at(const KernelGraph& graph, const DimValues& values) const;
  bool operator==(const LaunchCount&) const = default;
};

struct KernelLaunchCounts {
  std::array<LaunchCount, kGridAxes> grid;
  LaunchCount forloop;
};

// How block-graph kernel `kernel` of dynamic graph `graph` (at its reference extents) launches
// at any length: each grid axis and the trip count follow the dynamic cut that sets them
// (graph/dynamic_dims.h), the others are the kernel's own. UserError naming the kernel where a
// count does not follow one dim alone: a dim cut by both the grid and the loop (split-KV with
// fixed parts), or an axis set by two dims.
KernelLaunchCounts kernelLaunchCounts(const KernelGraph& graph, const KernelOp& kernel);

// The manifest's JSON for them (see the header comment); dims by name.
nlohmann::json dimProductJson(const DimProduct& product, const KernelGraph& graph);
nlohmann::json launchCountJson(const LaunchCount& count, const KernelGraph& graph);
// Their values at `values` (a length per dim, by name): UserError naming `where` (a JSON path)
// for JSON that is neither form or a dim `values` lacks.
int64_t evaluateDimProductJson(const nlohmann::json& json, const DimValues& values,
                               const std::string& where);
int64_t evaluateLaunchCountJson(const nlohmann::json& json, const DimValues& values,
                                const std::string& where);

}  // namespace mugraph::graph
