// Products and launch counts of dynamic dims, and their manifest JSON (see dynamic_extents.h).
#include "graph/dynamic_extents.h"

#include <algorithm>

#include "graph/error.h"

namespace mugraph::graph {
namespace {

int64_t ceilDivide(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// The extent of `tensor`'s dim `d` as a product: its dynamic dim, or its static size.
DimProduct extentProduct(const TensorDesc& tensor, int d) {
  const int dim = dynamicDimOf(tensor, d);
  if (dim == kStaticDim) return {tensor.shape[d], {}};
  return {1, {dim}};
}

int64_t valueOf(const DimValues& values, const std::string& name, const std::string& where) {
  const auto it = values.find(name);
  if (it == values.end()) {
    throw UserError(where, "needs the length of dynamic dim '" + name + "' (none was given)");
  }
  return it->second;
}

}  // namespace

DimProduct DimProduct::times(const DimProduct& other) const {
  DimProduct product{coefficient * other.coefficient, dims};
  product.dims.insert(product.dims.end(), other.dims.begin(), other.dims.end());
  std::sort(product.dims.begin(), product.dims.end());
  return product;
}

int64_t DimProduct::at(const KernelGraph& graph, const DimValues& values) const {
  int64_t value = coefficient;
  for (int dim : dims) value *= values.at(graph.dims.at(dim).name);
  return value;
}

std::vector<DimProduct> storageStrideProducts(const TensorDesc& tensor) {
  const int rank = static_cast<int>(tensor.shape.size());
  // The storage order of the logical dims, from the one definition of each layout.
  Dims logicalOf(rank);
  for (int d = 0; d < rank; ++d) logicalOf[d] = d;
  logicalOf = storedShape(logicalOf, tensor.layout);
  std::vector<DimProduct> strides(rank);
  DimProduct stride{1, {}};
  for (int k = rank - 1; k >= 0; --k) {
    const int logical = static_cast<int>(logicalOf[k]);
    strides[logical] = stride;
    stride = stride.times(extentProduct(tensor, logical));
  }
  return strides;
}

DimProduct elementProduct(const TensorDesc& tensor) {
  DimProduct count{1, {}};
  for (int d = 0; d < static_cast<int>(tensor.shape.size()); ++d) {
    count = count.times(extentProduct(tensor, d));
  }
  return count;
}

int64_t LaunchCount::at(int64_t n) const {
  return isStatic() ? constant : ceilDivide(n, tile);
}

int64_t LaunchCount::at(const KernelGraph& graph, const DimValues& values) const {
  return isStatic() ? constant : at(values.at(graph.dims.at(dim).name));
}

KernelLaunchCounts kernelLaunchCounts(const KernelGraph& graph, const KernelOp& kernel) {
  const BlockGraph& block = *kernel.block;
  KernelLaunchCounts counts;
  for (int axis = 0; axis < kGridAxes; ++axis) counts.grid[axis].constant = block.grid[axis];
  counts.forloop.constant = block.forloop;
  const auto set = [&](LaunchCount& slot, const DynamicCut& cut, const std::string& what) {
    const LaunchCount count{1, cut.dim, cut.tile};
    if (!slot.isStatic() && slot != count) {
      throw UserError("kernel '" + kernel.name + "'",
                      what + " follows two dynamic cuts (" + graph.dims.at(slot.dim).name +
                          " and " + graph.dims.at(cut.dim).name +
                          "); a kernel that takes the lengths needs one");
    }
    slot = count;
  };
  for (const DynamicCut& cut : blockDynamicCuts(graph, kernel)) {
    const bool grid = cut.gridAxis != kReplicated;
    if (grid && cut.loop) {
      // Split-KV with fixed parts: the grid keeps them, the trips follow the length
      // (graph::cutCounts).
      set(counts.forloop, DynamicCut{cut.dim, cut.gridAxis, true, cut.parts * cut.tile, 1},
          "the for-loop");
      continue;
    }
    if (grid)
      set(counts.grid[cut.gridAxis], cut, std::string("grid.") + gridAxisName(cut.gridAxis));
    if (cut.loop) set(counts.forloop, cut, "the for-loop");
  }
  return counts;
}

nlohmann::json dimProductJson(const DimProduct& product, const KernelGraph& graph) {
  if (product.isStatic()) return product.coefficient;
  nlohmann::json factors = nlohmann::json::array();
  if (product.coefficient != 1) factors.push_back(product.coefficient);
  for (int dim : product.dims) factors.push_back(graph.dims.at(dim).name);
  return factors;
}

nlohmann::json launchCountJson(const LaunchCount& count, const KernelGraph& graph) {
  if (count.isStatic()) return count.constant;
  return {{"ceil_div", {graph.dims.at(count.dim).name, count.tile}}};
}

int64_t evaluateDimProductJson(const nlohmann::json& json, const DimValues& values,
                               const std::string& where) {
  if (json.is_number_integer()) return json.get<int64_t>();
  if (!json.is_array()) {
    throw UserError(where, "must be an integer or a list of integers and dim names");
  }
  int64_t value = 1;
  for (size_t i = 0; i < json.size(); ++i) {
    const nlohmann::json& factor = json[i];
    const std::string at = where + "[" + std::to_string(i) + "]";
    if (factor.is_number_integer()) {
      value *= factor.get<int64_t>();
    } else if (factor.is_string()) {
      value *= valueOf(values, factor.get<std::string>(), at);
    } else {
      throw UserError(at, "must be an integer or a dim name");
    }
  }
  return value;
}

int64_t evaluateLaunchCountJson(const nlohmann::json& json, const DimValues& values,
                                const std::string& where) {
  if (json.is_number_integer()) return json.get<int64_t>();
  const bool form = json.is_object() && json.size() == 1 && json.contains("ceil_div") &&
                    json["ceil_div"].is_array() && json["ceil_div"].size() == 2 &&
                    json["ceil_div"][0].is_string() && json["ceil_div"][1].is_number_integer() &&
                    json["ceil_div"][1].get<int64_t>() > 0;
  if (!form) {
    throw UserError(where, "must be an integer or {\"ceil_div\": [dim name, positive tile]}");
  }
  const LaunchCount count{1, 0, json["ceil_div"][1].get<int64_t>()};
  return count.at(valueOf(values, json["ceil_div"][0].get<std::string>(), where + ".ceil_div[0]"));
}

}  // namespace mugraph::graph
