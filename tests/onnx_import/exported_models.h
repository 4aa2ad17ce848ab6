// The ONNX models of tests/onnx_import/models, which the import tests read.
#pragma once

#include <string>

namespace mugraph::onnx_import {

// The path of tests/onnx_import/models/<name>.onnx.
inline std::string exportedModel(const std::string& name) {
  return std::string(MUGRAPH_SOURCE_DIR) + "/tests/onnx_import/models/" + name + ".onnx";
}

}  // namespace mugraph::onnx_import
