// Builders that assemble programs, schedules and block graphs op by op, inferring every
// result's shape and dtype as they go. Parsers, tests, hand-written schedules and the
// search all build graphs through these, so inference lives in one place.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "graph/ir.h"

namespace mugraph::graph {

class GraphBuilder {
 public:
  explicit GraphBuilder(std::string name = "");
  // Starts from the inputs of `program` (same names, descs and order).
  static GraphBuilder withInputsOf(const Program& program, std::string name = "");

  // A dynamic dim (graph/dynamic_dims.h); declare it before the inputs that name it.
  void dim(DynamicDim dim);
  // `dynamicDims`: per dim a dynamic dim's index or kStaticDim (empty: all static); a dynamic
  // dim's extent in `shape` is its reference, the range's max.
  TensorId input(const std::string& name, DType dtype, Dims shape,
                 Layout layout = Layout::RowMajor, std::vector<int> dynamicDims = {});
  // A predefined op; an empty name gets a fresh one ("t0", "t1", ...). Throws ShapeError.
  TensorId op(OpKind kind, std::vector<TensorId> inputs, OpAttrs attrs = {},
              std::string name = "");
  // A block-graph kernel: output shapes come from the block graph's output ops.
  std::vector<TensorId> blockGraph(std::string kernelName, BlockGraph block,
                                   std::vector<TensorId> inputs,
                                   std::vector<std::pair<std::string, DType>> outputs);
  // `layout`: how the output is stored (a computed output may be heads_transposed, so that
  // the reader of a per-head result [h, s, d] as [s, h·d] needs no copy; graph/validate.h).
  void output(TensorId tensor, Layout layout = Layout::RowMajor);

  const TensorDesc& desc(TensorId tensor) const { return graph_.tensors[tensor]; }
  const KernelGraph& graph() const { return graph_; }
  KernelGraph finish() const;  // validates

 private:
  std::string freshName();
  TensorId addTensor(TensorDesc desc);

  KernelGraph graph_;
  int nextName_ = 0;
};

class BlockGraphBuilder {
 public:
  BlockGraphBuilder(std::array<int64_t, kGridAxes> grid, int threads, int64_t forloop,
                    std::vector<TensorDesc> kernelInputs);

  // A tile of kernel input `kernelInput`; `tile` declares it where a split does not divide
  // (empty: ⌈n/parts⌉, graph/tile_splits.h). Throws ShapeError on a bad split.
  TensorId input(int kernelInput, AxisMap imap, int fmap, std::string name = "", Dims tile = {});
  TensorId op(OpKind kind, std::vector<TensorId> inputs, OpAttrs attrs = {},
              std::string name = "");
  // Writes `tile` to the next kernel output (outputs are numbered in call order).
  void output(TensorId tile, AxisMap omap);
  void fuse(TensorId producer, std::vector<TensorId> fused);

  const BlockTensor& tile(TensorId tensor) const { return block_.tensors[tensor]; }
  const BlockGraph& block() const { return block_; }

 private:
  TensorId addTile(BlockTensor tile);

  BlockGraph block_;
  std::vector<TensorDesc> kernelInputs_;
  int outputs_ = 0;
};

}  // namespace mugraph::graph
