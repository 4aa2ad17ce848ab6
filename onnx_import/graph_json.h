// A model graph given as JSON (format "mugraph.graph", version 1) instead of an ONNX file:
// the form the PyTorch front end (python/mugraph/fx_graph.py) writes an FX graph in, read
// into the same records an ONNX file becomes, so both front ends share one partitioner and
// one op mapping. Nodes use ONNX operator names and attributes (the front end translates
// aten ops to them); every value carries its element type and, where known, its static
// shape. Schema: onnx_import/README.md, "Graph JSON".
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "onnx_import/onnx_model.h"

namespace mugraph::onnx_import {

inline constexpr const char* kGraphFormat = "mugraph.graph";
inline constexpr int kGraphVersion = 1;

// Throws UserError("source: $.json.path", reason) for anything the JSON gets wrong.
Model modelFromGraphJson(const nlohmann::json& graph, const std::string& source);

}  // namespace mugraph::onnx_import
