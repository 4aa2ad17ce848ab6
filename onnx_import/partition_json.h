// The partition as JSON: the one schema both `mugraph superoptimize MODEL` (summary.json) and
// the C API (capi/mugraph.h, for the PyTorch front end) describe subgraphs and left-out nodes
// with (onnx_import/README.md, "Output").
#pragma once

#include <nlohmann/json.hpp>

#include "onnx_import/import_model.h"

namespace mugraph::onnx_import {

// name, nodes, ops, program_text, program_hash, canonical_program_text and canonical_hash (the
// program with tensors named by role and position: equal for equal functions), inputs (name,
// onnx_value, reads_buffer_of, layout), outputs (name, onnx_value), repeated_kv_heads where folded.
nlohmann::json subgraphJson(const Subgraph& subgraph);

// [{node, op, reason}] for every node left to the framework.
nlohmann::json leftOutJson(const ImportedModel& model);

}  // namespace mugraph::onnx_import
