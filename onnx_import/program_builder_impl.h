// The builder behind buildProgram (program_builder.h), shared by its two files: reading values
// in and out (program_builder.cpp) and mapping each ONNX op (program_builder_ops.cpp).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "graph/builder.h"
#include "onnx_import/program_builder.h"

namespace mugraph::onnx_import::detail {

using graph::Dims;
using graph::OpKind;
using graph::TensorId;

// What an ONNX value is while its program is built: an IR tensor, a scalar constant, or
// factor / denominator waiting for the Mul that makes it a division (the IR has no reciprocal).
struct IrValue {
  TensorId tensor = -1;
  std::optional<double> scalar;
  TensorId denominator = -1;
  double factor = 1.0;
  int reciprocalNode = -1;
  bool readsOutside = false;  // an alias of a value from outside: an input, declared when read
};

inline IrValue tensorValue(TensorId id) {
  IrValue v;
  v.tensor = id;
  return v;
}

class ProgramBuilder {
 public:
  ProgramBuilder(const Model& model, const std::vector<NodeSupport>& support,
                 const std::vector<int>& nodes, const std::string& name,
                 const std::set<std::string>& readSwapped,
                 const std::map<std::string, Tiling>& tiled)
      : model_(model), support_(support), readSwapped_(readSwapped), tiled_(tiled), builder_(name) {
    for (int n : nodes) {
      for (const std::string& out : model.nodes[n].outputs) inside_.insert(out);
    }
    planBroadcastRanks(nodes);
  }

  void map(int index);
  void output(const std::string& value);
  BuiltProgram finish() {
    return {builder_.finish(), std::move(inputs_), std::move(outputs_), std::move(framework_),
            std::move(causalMasks_)};
  }

 private:
  [[noreturn]] void fail(const std::string& reason) const { throw BuildFailure(node_, reason); }
  const Node& node() const { return model_.nodes[node_]; }
  const Dims& onnxShape(const std::string& value) const { return *model_.values.at(value).shape; }

  std::optional<double> scalarOf(const std::string& value) const;
  int rankOf(const std::string& value) const;
  // The rank an element-wise op's result is built at: its operand's, or a later op's where that
  // op broadcasts the result against a higher rank (broadcastRanks_).
  int resultRank(int rank, const std::string& out) const;
  void planBroadcastRanks(const std::vector<int>& nodes);
  // `readAs`: a value from outside read at this dtype, not its own (external's castFrom).
  TensorId tensor(const std::string& value, int rank,
                  std::optional<graph::DType> readAs = std::nullopt);
  TensorId external(const std::string& value, int rank, bool transposeHere = false,
                    std::optional<graph::DType> readAs = std::nullopt);
  // The dtype `value` has in the program: its IR tensor's, or for a value read from outside,
  // the dtype external would declare it at; nothing for a constant.
  std::optional<graph::DType> programDtype(const std::string& value) const;
  std::vector<int> dynamicRecord(const std::string& value, size_t rank, bool transposed);
  std::string fresh(const std::string& base);
  TensorId op(OpKind kind, std::vector<TensorId> in, graph::OpAttrs attrs = {},
              const std::string& base = "");
  void define(const std::string& value, TensorId id);
  int irDim(const std::string& value, int64_t axis) const;
  std::string boundValue(const std::string& value) const;
  int castProducing(const std::string& value, graph::DType dtype) const;

  void mapMatmul();
  void mapGemm();
  void mapBinary();
  void mapCausalMask();
  void mapReduce();
  void mapSoftmax();
  void mapRotateHalf();
  void mapRotatePairs();

  const Model& model_;
  const std::vector<NodeSupport>& support_;
  const std::set<std::string>& readSwapped_;
  const std::map<std::string, Tiling>& tiled_;
  graph::GraphBuilder builder_;
  std::set<std::string> inside_;
  std::map<std::string, IrValue> values_;
  // value (^T where read transposed) @ rank -> (input, rank)
  std::map<std::string, std::pair<TensorId, int>> externals_;
  // Values of element-wise chains a later op of the subgraph broadcasts against a higher
  // rank, and that rank (planBroadcastRanks).
  std::map<std::string, int> broadcastRanks_;
  std::set<std::string> names_;
  std::vector<BoundInput> inputs_;
  std::vector<BoundOutput> outputs_;
  std::set<int> framework_;
  std::vector<CausalMaskRead> causalMasks_;
  int node_ = -1;
};

}  // namespace mugraph::onnx_import::detail
