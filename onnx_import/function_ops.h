// ONNX ops that the standard defines as functions of other ops (LayerNormalization, Gelu),
// replaced by their bodies before anything else reads the model: the partitioner, the
// shape inference and the op mapping then see only primitive ops, so each of these ops has
// one definition (the function body written here, after the ONNX specification's), and a
// LayerNorm fuses with the matmul after it like the RMSNorm that transformers writes out.
//
// The nodes of a body are named "<node>/<part>" and keep the node they replace as their
// `origin`: a subgraph lists, and a node left to the framework is reported as, that name.
#pragma once

#include "onnx_import/onnx_model.h"

namespace mugraph::onnx_import {

// Replaces every LayerNormalization and Gelu of the default domain by its body, in place.
void expandFunctionOps(Model& model);

// The name a subgraph lists for the node: its origin where it is part of a body.
const std::string& sourceName(const Node& node);

}  // namespace mugraph::onnx_import
