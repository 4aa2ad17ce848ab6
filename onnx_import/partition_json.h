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

// The program with its tensors renamed by role and position (x0.. inputs, y0.. outputs, t0..
// the rest), its dynamic dims by position (n0..) and the graph named "subgraph": two
// subgraphs computing the same function on the same shapes (a model's layers, each with a KV
// cache length of its own name) get the same text, so they share one search and one cache
// entry. Launches bind tensors by position, which the renaming keeps, and read each dim's
// length from the tensors that have it.
graph::Program canonicalNames(const graph::Program& program);

// [{node, op, reason}] for every node left to the framework.
nlohmann::json leftOutJson(const ImportedModel& model);

}  // namespace mugraph::onnx_import
