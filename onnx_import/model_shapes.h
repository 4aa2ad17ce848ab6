// Static shapes and element types of every value a model computes, where the file does not
// already give them (exporters often write value_info for some values only). The ops the
// importer maps, the views, and the ops around them that exporters emit (Slice, Concat,
// Expand, Tile) are inferred; a value whose shape stays unknown keeps the reason, and a node
// that needs it is left to the framework with that reason.
#pragma once

#include <optional>
#include <vector>

#include "onnx_import/onnx_model.h"

namespace mugraph::onnx_import {

void inferShapes(Model& model);

// An axis attribute or input entry, made non-negative for a tensor of `rank`; nullopt when out
// of range.
std::optional<int> normalizeAxis(int64_t axis, size_t rank);

// Numpy broadcasting (right-aligned); nullopt where the shapes do not broadcast.
std::optional<graph::Dims> broadcastShapes(const graph::Dims& a, const graph::Dims& b);

// A Reshape's result shape for its target (0 copies the input's dim, -1 is inferred); nullopt
// where the target does not fit the input.
std::optional<graph::Dims> reshapeShape(const graph::Dims& in, const Constant& target);

// The axes a Reduce*/Squeeze/Unsqueeze node names: its attribute (older opsets) or its second
// input (a constant); nullopt when they are given by a computed tensor.
std::optional<std::vector<int64_t>> axesOf(const Model& model, const Node& node);

}  // namespace mugraph::onnx_import
