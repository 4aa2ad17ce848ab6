#include "graph/hash.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string_view>

namespace mugraph::graph {
namespace {

// splitmix64 finalizer: a well-mixed 64-bit permutation.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

class Hasher {
 public:
  explicit Hasher(std::string_view tag) { add(tag); }
  Hasher& add(uint64_t v) {
    state_ = mix(state_ ^ mix(v + ++count_));
    return *this;
  }
  Hasher& add(std::string_view s) {
    uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a over the bytes, then mixed in
    for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
    return add(h).add(static_cast<uint64_t>(s.size()));
  }
  Hasher& add(const Dims& dims) {
    add(static_cast<uint64_t>(dims.size()));
    for (int64_t d : dims) add(static_cast<uint64_t>(d));
    return *this;
  }
  Hasher& add(double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    return add(bits);
  }
  Hasher& addSorted(std::vector<uint64_t> values) {
    std::sort(values.begin(), values.end());
    for (uint64_t v : values) add(v);
    return add(static_cast<uint64_t>(values.size()));
  }
  uint64_t value() const { return state_; }

 private:
  uint64_t state_ = 0x243f6a8885a308d3ULL;
  uint64_t count_ = 0;
};

void addAttrs(Hasher& h, OpKind kind, const OpAttrs& attrs) {
  const OpInfo& info = opInfo(kind);
  h.add(info.name);
  if (info.hasDim) h.add(static_cast<uint64_t>(attrs.dim));
  if (info.hasTo) h.add(static_cast<uint64_t>(attrs.to));
  if (info.hasScale) h.add(attrs.scale);
  if (info.hasQueries) h.add(static_cast<uint64_t>(attrs.queries));
}

uint64_t computeHash(OpKind kind, const OpAttrs& attrs, std::vector<uint64_t> operands) {
  Hasher h("op");
  addAttrs(h, kind, attrs);
  if (isCommutative(kind)) std::sort(operands.begin(), operands.end());
  for (uint64_t v : operands) h.add(v);
  return h.value();
}

// Hash of everything in a block graph except which kernel output each tile goes to, and the
// hashes of each output tile's placement (so outputs hash independently of their order).
struct BlockHashes {
  uint64_t body = 0;
  std::vector<uint64_t> outputs;  // per kernel output index
};

BlockHashes hashBlockGraph(const BlockGraph& block, const std::vector<uint64_t>& kernelInputs) {
  std::vector<uint64_t> tile(block.tensors.size(), 0);
  std::vector<uint64_t> outputPlacement;
  std::vector<std::pair<int, uint64_t>> byIndex;
  for (const BlockOp& op : block.ops) {
    if (op.kind == OpKind::Input) {
      Hasher h("tile-in");
      h.add(kernelInputs.at(op.kernelTensor)).add(static_cast<uint64_t>(op.fmap));
      for (int a = 0; a < kGridAxes; ++a) h.add(static_cast<uint64_t>(op.imap[a]));
      for (int64_t t : op.tile) h.add(static_cast<uint64_t>(t));  // declared partial tiles only
      tile[op.output] = h.value();
    } else if (op.kind == OpKind::Output) {
      Hasher h("tile-out");
      h.add(tile.at(op.inputs.at(0)));
      for (int a = 0; a < kGridAxes; ++a) h.add(static_cast<uint64_t>(op.omap[a]));
      outputPlacement.push_back(h.value());
      byIndex.emplace_back(op.kernelTensor, h.value());
    } else {
      std::vector<uint64_t> operands;
      for (TensorId t : op.inputs) operands.push_back(tile.at(t));
      tile[op.output] = computeHash(op.kind, op.attrs, std::move(operands));
    }
  }
  std::vector<uint64_t> fusion;
  for (const FusionGroup& g : block.fusion) {
    Hasher h("fusion");
    h.add(tile.at(g.producer));
    for (TensorId t : g.fused) h.add(tile.at(t));
    fusion.push_back(h.value());
  }
  Hasher body("block");
  for (int a = 0; a < kGridAxes; ++a) body.add(static_cast<uint64_t>(block.grid[a]));
  body.add(static_cast<uint64_t>(block.threads)).add(static_cast<uint64_t>(block.forloop));
  // Only where there are clusters, so that the hashes (and names) of schedules without stay.
  if (block.clusterBlocks() > 1) {
    for (int a = 0; a < kGridAxes; ++a) body.add(static_cast<uint64_t>(block.cluster[a]));
  }
  if (block.occupancy > 1)
    body.add(std::string_view("occupancy")).add(static_cast<uint64_t>(block.occupancy));
  body.addSorted(outputPlacement).addSorted(fusion);
  BlockHashes result;
  result.body = body.value();
  std::sort(byIndex.begin(), byIndex.end());
  for (const auto& [index, value] : byIndex) result.outputs.push_back(value);
  return result;
}

std::vector<uint64_t> tensorHashes(const KernelGraph& graph) {
  std::vector<uint64_t> hash(graph.tensors.size(), 0);
  for (TensorId t : graph.inputs) {
    const TensorDesc& d = graph.tensors.at(t);
    Hasher h("input");
    h.add(d.name).add(dtypeName(d.dtype)).add(d.shape).add(layoutName(d.layout));
    for (size_t i = 0; i < d.dynamicDims.size(); ++i) {  // static inputs hash as before
      if (d.dynamicDims[i] == kStaticDim) continue;
      const DynamicDim& dim = graph.dims.at(d.dynamicDims[i]);
      h.add(static_cast<uint64_t>(i)).add(dim.name).add(static_cast<uint64_t>(dim.min));
    }
    hash[t] = h.value();
  }
  for (const KernelOp& op : graph.ops) {
    std::vector<uint64_t> operands;
    for (TensorId t : op.inputs) operands.push_back(hash.at(t));
    if (op.kind != OpKind::BlockGraph) {
      Hasher h("tensor");
      h.add(computeHash(op.kind, op.attrs, operands));
      h.add(dtypeName(graph.tensors.at(op.outputs.at(0)).dtype));
      hash[op.outputs[0]] = h.value();
      continue;
    }
    const BlockHashes block = hashBlockGraph(*op.block, operands);
    for (size_t i = 0; i < op.outputs.size(); ++i) {
      Hasher h("block-output");
      h.add(block.body).add(i < block.outputs.size() ? block.outputs[i] : 0);
      h.add(dtypeName(graph.tensors.at(op.outputs[i]).dtype));
      hash[op.outputs[i]] = h.value();
    }
  }
  return hash;
}

}  // namespace

uint64_t kernelGraphHash(const KernelGraph& graph) {
  const std::vector<uint64_t> hash = tensorHashes(graph);
  std::vector<uint64_t> outputs;
  for (TensorId t : graph.outputs) {
    Hasher h("output");
    h.add(graph.tensors.at(t).name).add(hash.at(t));
    // Only where it is not row-major, so that every other graph hashes as before.
    const Layout layout = graph.tensors.at(t).layout;
    if (layout != Layout::RowMajor) h.add(layoutName(layout));
    outputs.push_back(h.value());
  }
  std::vector<uint64_t> inputs;
  for (TensorId t : graph.inputs) inputs.push_back(hash.at(t));
  Hasher h("graph");
  h.addSorted(inputs).addSorted(outputs);
  for (const DynamicDim& dim : graph.dims) {  // none in a static graph: its hash is as before
    h.add(dim.name).add(static_cast<uint64_t>(dim.min)).add(static_cast<uint64_t>(dim.max));
  }
  // Every kernel launched counts, even one whose result is unused: it is part of the schedule.
  std::vector<uint64_t> kernels;
  for (const KernelOp& op : graph.ops) {
    Hasher k("kernel");
    for (TensorId t : op.outputs) k.add(hash.at(t));
    kernels.push_back(k.value());
  }
  h.addSorted(kernels);
  return h.value();
}

uint64_t programHash(const Program& program) {
  return kernelGraphHash(program);
}

uint64_t scheduleHash(const Schedule& schedule) {
  Hasher h("schedule");
  h.add(programHash(schedule.program)).add(kernelGraphHash(schedule.graph));
  return h.value();
}

std::string hashHex(uint64_t hash) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

std::string variantName(const Schedule& schedule) {
  std::string name = "v";  // appended: GCC 12's -Wrestrict misfires on "v" + std::string
  name += hashHex(scheduleHash(schedule));
  return name;
}

}  // namespace mugraph::graph
