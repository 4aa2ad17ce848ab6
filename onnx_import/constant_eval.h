// The value of a tensor computed from constants alone, evaluated: what a mask built in the
// graph holds (positions from Range, comparisons, And/Or/Not, Where, Trilu, ConstantOfShape,
// the reshapes, Expand and casts around them), so a causal mask an exporter did not fold into
// an initializer is still recognized by its values (causal_masks.h). model_shapes.cpp folds
// only the small integer graphs of target shapes; this evaluation is larger and runs only for
// the operand of an Add before a softmax.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>

#include "onnx_import/onnx_model.h"

namespace mugraph::onnx_import {

// A value (and every value it is computed from) with more elements is not evaluated.
inline constexpr int64_t kMaxEvaluatedElements = int64_t{1} << 24;

struct Evaluated {
  Constant value;
  std::set<int> nodes;                        // the nodes evaluated
  std::map<std::string, graph::Dims> shapes;  // the shapes of the values they compute
};

// nullopt where `value` depends on a graph input, a large initializer or an op outside the
// list above, or is too large.
std::optional<Evaluated> evaluateConstant(const Model& model, const std::string& value);

}  // namespace mugraph::onnx_import
