#include "graph/builder.h"

#include "graph/dynamic_dims.h"
#include "graph/shape_inference.h"
#include "graph/validate.h"

namespace mugraph::graph {

GraphBuilder::GraphBuilder(std::string name) {
  graph_.name = std::move(name);
}

GraphBuilder GraphBuilder::withInputsOf(const Program& program, std::string name) {
  GraphBuilder builder(std::move(name));
  builder.graph_.dims = program.dims;
  for (TensorId t : program.inputs) {
    const TensorDesc& d = program.tensors[t];
    builder.input(d.name, d.dtype, d.shape, d.layout, d.dynamicDims);
  }
  return builder;
}

std::string GraphBuilder::freshName() {
  for (;;) {
    std::string name = "t" + std::to_string(nextName_++);
    if (!graph_.findTensor(name)) return name;
  }
}

TensorId GraphBuilder::addTensor(TensorDesc desc) {
  if (desc.name.empty()) desc.name = freshName();
  if (graph_.findTensor(desc.name)) throw ShapeError("duplicate tensor '" + desc.name + "'");
  graph_.tensors.push_back(std::move(desc));
  return static_cast<TensorId>(graph_.tensors.size() - 1);
}

void GraphBuilder::dim(DynamicDim dim) {
  graph_.dims.push_back(std::move(dim));
}

TensorId GraphBuilder::input(const std::string& name, DType dtype, Dims shape, Layout layout,
                             std::vector<int> dynamicDims) {
  const TensorId id =
      addTensor(TensorDesc{name, dtype, std::move(shape), layout, std::move(dynamicDims)});
  graph_.inputs.push_back(id);
  return id;
}

TensorId GraphBuilder::op(OpKind kind, std::vector<TensorId> inputs, OpAttrs attrs,
                          std::string name) {
  std::vector<Operand> operands;
  for (TensorId t : inputs) {
    const TensorDesc& d = graph_.tensors.at(t);
    operands.push_back(Operand{d.name, d.dtype, d.shape});
  }
  Inferred inferred = inferOp(kind, attrs, operands);
  checkWholeTensorAttrs(kind, attrs, operands.at(0));
  const TensorId out = addTensor(TensorDesc{std::move(name), inferred.dtype, inferred.shape});
  KernelOp op;
  op.kind = kind;
  op.inputs = std::move(inputs);
  op.outputs = {out};
  op.attrs = attrs;
  graph_.tensors[out].dynamicDims = resultDynamicDims(graph_, op).at(0);
  graph_.ops.push_back(std::move(op));
  return out;
}

std::vector<TensorId> GraphBuilder::blockGraph(std::string kernelName, BlockGraph block,
                                               std::vector<TensorId> inputs,
                                               std::vector<std::pair<std::string, DType>> outputs) {
  std::vector<Dims> shapes(outputs.size());
  std::vector<bool> written(outputs.size(), false);
  std::vector<Dims> inputShapes;
  for (TensorId t : inputs) inputShapes.push_back(graph_.tensors.at(t).shape);
  const std::vector<TileSplit> splits = blockTileSplits(block, inputShapes);
  for (const BlockOp& bop : block.ops) {
    if (bop.kind != OpKind::Output) continue;
    if (bop.kernelTensor < 0 || bop.kernelTensor >= static_cast<int>(outputs.size())) {
      throw ShapeError("block graph '" + kernelName + "' writes an output it does not declare");
    }
    const BlockTensor& tile = block.tensors.at(bop.inputs.at(0));
    shapes[bop.kernelTensor] =
        outputDeviceShape(tile.shape, tile.name, block, bop, &splits.at(bop.inputs.at(0)));
    written[bop.kernelTensor] = true;
  }
  KernelOp op;
  op.kind = OpKind::BlockGraph;
  op.name = std::move(kernelName);
  op.inputs = std::move(inputs);
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!written[i]) throw ShapeError("block graph output '" + outputs[i].first + "' is unwritten");
    op.outputs.push_back(addTensor(TensorDesc{outputs[i].first, outputs[i].second, shapes[i]}));
  }
  op.block = std::move(block);
  const std::vector<std::vector<int>> dynamicDims = resultDynamicDims(graph_, op);
  for (size_t i = 0; i < op.outputs.size(); ++i) {
    graph_.tensors[op.outputs[i]].dynamicDims = dynamicDims.at(i);
  }
  graph_.ops.push_back(std::move(op));
  return graph_.ops.back().outputs;
}

void GraphBuilder::output(TensorId tensor, Layout layout) {
  if (layout != Layout::RowMajor) graph_.tensors.at(tensor).layout = layout;
  graph_.outputs.push_back(tensor);
}

KernelGraph GraphBuilder::finish() const {
  if (graph_.isProgram()) {
    validateProgram(graph_);
  } else {
    validateKernelGraph(graph_);
  }
  return graph_;
}

BlockGraphBuilder::BlockGraphBuilder(std::array<int64_t, kGridAxes> grid, int threads,
                                     int64_t forloop, std::vector<TensorDesc> kernelInputs)
    : kernelInputs_(std::move(kernelInputs)) {
  block_.grid = grid;
  block_.threads = threads;
  block_.forloop = forloop;
}

TensorId BlockGraphBuilder::addTile(BlockTensor tile) {
  if (tile.name.empty()) tile.name = "b" + std::to_string(block_.tensors.size());
  for (const BlockTensor& t : block_.tensors) {
    if (t.name == tile.name) throw ShapeError("duplicate tile '" + tile.name + "'");
  }
  block_.tensors.push_back(std::move(tile));
  return static_cast<TensorId>(block_.tensors.size() - 1);
}

TensorId BlockGraphBuilder::input(int kernelInput, AxisMap imap, int fmap, std::string name,
                                  Dims tile) {
  const TensorDesc& src = kernelInputs_.at(kernelInput);
  BlockOp op;
  op.kind = OpKind::Input;
  op.kernelTensor = kernelInput;
  op.imap = imap;
  op.fmap = fmap;
  op.tile = std::move(tile);
  Dims tileShape = inputTileShape(src.shape, src.name, block_, op);
  op.output = addTile(BlockTensor{std::move(name), src.dtype, std::move(tileShape)});
  block_.ops.push_back(op);
  return op.output;
}

TensorId BlockGraphBuilder::op(OpKind kind, std::vector<TensorId> inputs, OpAttrs attrs,
                               std::string name) {
  std::vector<Operand> operands;
  for (TensorId t : inputs) {
    const BlockTensor& d = block_.tensors.at(t);
    operands.push_back(Operand{d.name, d.dtype, d.shape});
  }
  Inferred inferred = inferOp(kind, attrs, operands);
  BlockOp op;
  op.kind = kind;
  op.inputs = std::move(inputs);
  op.attrs = attrs;
  op.output = addTile(BlockTensor{std::move(name), inferred.dtype, inferred.shape});
  block_.ops.push_back(std::move(op));
  return block_.ops.back().output;
}

void BlockGraphBuilder::output(TensorId tile, AxisMap omap) {
  BlockOp op;
  op.kind = OpKind::Output;
  op.inputs = {tile};
  op.kernelTensor = outputs_++;
  op.omap = omap;
  block_.ops.push_back(std::move(op));
}

void BlockGraphBuilder::fuse(TensorId producer, std::vector<TensorId> fused) {
  block_.fusion.push_back(FusionGroup{producer, std::move(fused)});
}

}  // namespace mugraph::graph
