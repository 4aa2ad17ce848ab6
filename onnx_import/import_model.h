// `mugraph superoptimize model.onnx`: an ONNX model read, its nodes mapped, and the graph
// partitioned into maximal connected subgraphs of mapped nodes, each a µgraph program named
// after its nodes. Views (contiguous reshapes, swaps of the last two dims or of the heads) join
// no subgraph: a subgraph reads the buffer behind them; except a head transpose of a value
// computed along the last axis alone, which the subgraph computes in the head order instead
// (heads_pushdown.h). Nodes left to the framework are listed with their
// reason. When a subgraph cannot be expressed (a node the mapping refuses there, a result
// leaving in another dtype), the node is left out with the reason and the graph is
// partitioned again, so every subgraph reported is a valid program.
#pragma once

#include <string>
#include <vector>

#include "graph/ir.h"
#include "onnx_import/onnx_model.h"
#include "onnx_import/program_builder.h"

namespace mugraph::onnx_import {

struct Subgraph {
  std::string name;                // named after its first and last ONNX nodes
  std::vector<std::string> nodes;  // ONNX node names, views it reads through included
  std::vector<std::string> ops;    // their op types, in the same order
  graph::Program program;
  std::vector<BoundInput> inputs;
  std::vector<BoundOutput> outputs;
  std::string headFold;  // where GQA's repeated KV heads are read as views (repeated_heads.h)
  std::vector<CausalMaskRead> causalMasks;  // masks read as structure (causal_masks.h)
};

struct LeftOut {
  std::string node;
  std::string op;
  std::string reason;
};

struct ImportedModel {
  std::string path;
  int64_t opset = 0;
  std::vector<Subgraph> subgraphs;   // in the order of their first node
  std::vector<LeftOut> unsupported;  // in node order
};

// Throws UserError for a file that cannot be read as a model (onnx_model.h). loadModel, then
// partitionModel.
ImportedModel importModel(const std::string& path, const DimPins& pins,
                          const DimRanges& ranges = {});

// The partition of a model already read into records (by loadModel, or by another front end
// writing the same ONNX op vocabulary): shapes inferred where missing, nodes classified and
// mapped, the graph partitioned. ImportedModel::path is Model::path.
ImportedModel partitionModel(const Model& model);

}  // namespace mugraph::onnx_import
