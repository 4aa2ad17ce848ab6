// The values of ONNX tensors (TensorProto) as the model reader needs them: the float element
// types programs compute in, the values of small constants (a Reshape's shape, an epsilon),
// and element access into large float tensors, read only to recognize a causal mask.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "graph/types.h"
#include "onnx_import/onnx_model.h"

namespace onnx {
class TensorProto;
}

namespace mugraph::onnx_import {

// The program dtype of an ONNX element type (float16, bfloat16, float), else nullopt.
std::optional<graph::DType> floatDtype(int32_t elemType);

// The element type's name as messages print it ("float16", "int64", or "type N").
std::string elemTypeName(int32_t elemType);

// The values of a small tensor, or nullopt where it is large (a weight), stored outside the
// file, or of a type the mapping never reads (strings, complex numbers).
std::optional<Constant> readConstant(const onnx::TensorProto& t);

// The values of a boolean or integer tensor of at most `maxCount` elements, whatever its size
// otherwise: the comparisons and positions a mask computed in the graph reads (exporters store
// `keys <= queries` of a long prompt as a [1, 1, S, S] boolean initializer); nullopt for other
// types, larger tensors and external data.
std::optional<Constant> readMaskOperand(const onnx::TensorProto& t, int64_t maxCount);

// Element i of a float tensor of `count` elements; nullopt for other types, external data, or
// data that does not hold `count` elements.
std::optional<std::function<double(int64_t)>> floatElements(const onnx::TensorProto& t,
                                                            int64_t count);

}  // namespace mugraph::onnx_import
