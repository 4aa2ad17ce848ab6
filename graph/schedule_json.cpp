// Schedule JSON ("mugraph.schedule", version 1): the writer and the checked reader. Tensor ids
// follow the order of "tensors" (the writer lists tensors by id, so ids survive a round trip);
// tiles are numbered in their block graph's op order, and their shapes are inferred on read.
#include <map>
#include <string_view>

#include "graph/cuda_limits.h"
#include "graph/error.h"
#include "graph/hash.h"
#include "graph/json_format.h"
#include "graph/json_reader.h"
#include "graph/shape_inference.h"
#include "graph/syntax.h"
#include "graph/validate.h"

namespace mugraph::graph {
namespace {

using nlohmann::json;

json axisMapToJson(const AxisMap& map) {
  return json{{"x", map[0]}, {"y", map[1]}, {"z", map[2]}};
}

AxisMap readAxisMap(const JsonReader& field) {
  field.expectObject({"x", "y", "z"});
  AxisMap map{kReplicated, kReplicated, kReplicated};
  for (int axis = 0; axis < kGridAxes; ++axis) {
    if (std::optional<JsonReader> dim = field.find(gridAxisName(axis))) {
      map[axis] = static_cast<int>(dim->integer(kReplicated, kMaxRank - 1));
    }
  }
  return map;
}

json blockOpToJson(const KernelGraph& graph, const KernelOp& kernel, const BlockOp& op) {
  const BlockGraph& block = *kernel.block;
  json item{{"op", opName(op.kind)}};
  if (op.kind == OpKind::Input) {
    item["from"] = graph.tensors[kernel.inputs.at(op.kernelTensor)].name;
    item["output"] = block.tensors[op.output].name;
    item["imap"] = axisMapToJson(op.imap);
    item["fmap"] = op.fmap;
    if (!op.tile.empty()) item["tile"] = op.tile;
    return item;
  }
  item["inputs"] = json::array();
  for (TensorId t : op.inputs) item["inputs"].push_back(block.tensors[t].name);
  if (op.kind == OpKind::Output) {
    item["to"] = graph.tensors[kernel.outputs.at(op.kernelTensor)].name;
    item["omap"] = axisMapToJson(op.omap);
    return item;
  }
  item["output"] = block.tensors[op.output].name;
  writeAttrs(item, op.kind, op.attrs);
  return item;
}

json kernelToJson(const KernelGraph& graph, const KernelOp& kernel) {
  json item{{"op", opName(kernel.kind)}, {"inputs", json::array()}};
  for (TensorId t : kernel.inputs) item["inputs"].push_back(graph.tensors[t].name);
  if (kernel.kind != OpKind::BlockGraph) {
    if (!kernel.name.empty()) item["name"] = kernel.name;
    item["output"] = graph.tensors[kernel.outputs.at(0)].name;
    writeAttrs(item, kernel.kind, kernel.attrs);
    return item;
  }
  const BlockGraph& block = *kernel.block;
  item["name"] = kernel.name;
  item["outputs"] = json::array();
  for (TensorId t : kernel.outputs) item["outputs"].push_back(graph.tensors[t].name);
  item["grid"] = json{{"x", block.grid[0]}, {"y", block.grid[1]}, {"z", block.grid[2]}};
  if (block.clusterBlocks() > 1) {
    item["cluster"] =
        json{{"x", block.cluster[0]}, {"y", block.cluster[1]}, {"z", block.cluster[2]}};
  }
  item["threads"] = block.threads;
  if (block.occupancy > 1) item["occupancy"] = block.occupancy;
  item["forloop"] = block.forloop;
  item["ops"] = json::array();
  for (const BlockOp& op : block.ops) item["ops"].push_back(blockOpToJson(graph, kernel, op));
  item["fusion"] = json::array();
  for (const FusionGroup& group : block.fusion) {
    json fused = json::array();
    for (TensorId t : group.fused) fused.push_back(block.tensors[t].name);
    item["fusion"].push_back(
        json{{"producer", block.tensors[group.producer].name}, {"fused", std::move(fused)}});
  }
  return item;
}

// Names defined by `key` of each element of `list`, with the element's path.
std::map<std::string, std::string> definitionSites(const JsonReader& list, const char* key) {
  std::map<std::string, std::string> sites;
  if (!list.value().is_array()) return sites;
  for (const JsonReader& item : list.items()) {
    const json& value = item.value();
    if (!value.is_object() || !value.contains(key) || !value[key].is_string()) continue;
    sites.emplace(value[key].get<std::string>(), item.path());
  }
  return sites;
}

[[noreturn]] void failUse(const JsonReader& use, const std::string& what, const std::string& name,
                          const std::map<std::string, std::string>& sites) {
  auto site = sites.find(name);
  if (site != sites.end()) {
    use.fail(what + " '" + name + "' is used before it is defined at " + site->second +
             " (forward reference or cycle)");
  }
  use.fail("unknown " + what + " '" + name + "'");
}

// Which grid axis (or the forloop) a tile-split error comes from: add one axis at a time until
// the split fails, so the error points at the one field to fix.
std::string tileErrorField(const Dims& shape, const BlockGraph& block, const BlockOp& op) {
  BlockGraph partial;
  BlockOp probe = op;
  probe.imap = probe.omap = AxisMap{kReplicated, kReplicated, kReplicated};
  probe.fmap = kReplicated;
  probe.tile.clear();
  const bool isInput = op.kind == OpKind::Input;
  for (int axis = 0; axis < kGridAxes; ++axis) {
    partial.grid[axis] = block.grid[axis];
    (isInput ? probe.imap : probe.omap)[axis] = (isInput ? op.imap : op.omap)[axis];
    try {
      isInput ? inputTileShape(shape, "", partial, probe)
              : outputDeviceShape(shape, "", partial, probe);
    } catch (const ShapeError&) {
      return std::string(isInput ? "imap." : "omap.") + gridAxisName(axis);
    }
  }
  return isInput ? "fmap" : "omap";
}

class ScheduleReader {
 public:
  ScheduleReader(const JsonReader& top, Schedule& schedule) : top_(top), schedule_(schedule) {}

  void readTensors();
  void readKernel(const JsonReader& item);
  void readOutputs();

 private:
  TensorId listed(const JsonReader& use) const;
  TensorId readUse(const JsonReader& use) const;
  TensorId readDefinition(const JsonReader& field);
  BlockGraph readBlockGraph(const JsonReader& item, const KernelOp& kernel) const;
  void readBlockOp(const JsonReader& item, const KernelOp& kernel, BlockGraph& block,
                   std::map<std::string, TensorId>& tiles,
                   const std::map<std::string, std::string>& sites) const;

  const JsonReader& top_;
  Schedule& schedule_;
  std::map<std::string, TensorId> ids_;
  std::vector<bool> defined_;
  std::map<std::string, std::string> writers_;  // tensor name -> path of the kernel writing it
};

void ScheduleReader::readTensors() {
  KernelGraph& graph = schedule_.graph;
  const JsonReader list = top_.at("tensors");
  graph.dims = schedule_.program.dims;  // a schedule's dims are its program's
  for (const JsonReader& item : list.items()) {
    TensorDesc desc = readTensorDesc(item, graph.dims);
    if (ids_.count(desc.name)) item.at("name").fail("duplicate tensor '" + desc.name + "'");
    ids_[desc.name] = static_cast<TensorId>(graph.tensors.size());
    graph.tensors.push_back(std::move(desc));
  }
  defined_.assign(graph.tensors.size(), false);
  const Program& program = schedule_.program;
  for (TensorId t : program.inputs) {
    auto id = ids_.find(program.tensors[t].name);
    if (id == ids_.end()) {
      list.fail("program input '" + program.tensors[t].name + "' is not listed in tensors");
    }
    graph.inputs.push_back(id->second);
    defined_[id->second] = true;
  }
  const JsonReader kernels = top_.at("kernels");
  writers_ = definitionSites(kernels, "output");
  if (!kernels.value().is_array()) return;
  for (const JsonReader& kernel : kernels.items()) {
    if (!kernel.value().is_object() || !kernel.value().contains("outputs")) continue;
    for (const json& name : kernel.value()["outputs"]) {
      if (name.is_string()) writers_.emplace(name.get<std::string>(), kernel.path());
    }
  }
}

TensorId ScheduleReader::listed(const JsonReader& use) const {
  const std::string name = use.tensorName();
  auto id = ids_.find(name);
  if (id == ids_.end()) use.fail("unknown tensor '" + name + "' (not listed in $.tensors)");
  return id->second;
}

TensorId ScheduleReader::readUse(const JsonReader& use) const {
  const TensorId id = listed(use);
  if (!defined_[id]) failUse(use, "tensor", use.string(), writers_);
  return id;
}

TensorId ScheduleReader::readDefinition(const JsonReader& field) {
  const TensorId id = listed(field);
  if (defined_[id]) {
    field.fail("tensor '" + field.string() + "' is already a schedule input or an earlier " +
               "kernel's output (each tensor is written once)");
  }
  defined_[id] = true;
  return id;
}

void ScheduleReader::readKernel(const JsonReader& item) {
  KernelOp kernel;
  kernel.kind = readOpKind(item, OpLevel::Kernel);
  if (kernel.kind == OpKind::BlockGraph) {
    item.expectObject({"op", "name", "inputs", "outputs", "grid", "cluster", "threads",
                       "occupancy", "forloop", "ops", "fusion"});
  } else {
    std::vector<std::string_view> keys{"op", "name", "inputs", "output"};
    for (std::string_view key : attrKeys(kernel.kind)) keys.push_back(key);
    kernel.attrs = readAttrs(item, kernel.kind);
    item.expectObject(keys);
  }
  if (std::optional<JsonReader> name = item.find("name")) kernel.name = name->graphName();
  const JsonReader inputs = item.at("inputs");
  for (const JsonReader& use : inputs.items()) {
    const TensorId id = readUse(use);
    if (kernel.kind == OpKind::BlockGraph &&
        std::find(kernel.inputs.begin(), kernel.inputs.end(), id) != kernel.inputs.end()) {
      use.fail("tensor '" + use.string() + "' is listed twice (input ops may read it twice)");
    }
    kernel.inputs.push_back(id);
  }
  if (kernel.kind != OpKind::BlockGraph) {
    const int arity = opInfo(kernel.kind).arity;
    if (static_cast<int>(kernel.inputs.size()) != arity) {
      inputs.fail("op '" + std::string(opName(kernel.kind)) + "' takes " + std::to_string(arity) +
                  " operand(s), got " + std::to_string(kernel.inputs.size()));
    }
    kernel.outputs.push_back(readDefinition(item.at("output")));
    schedule_.graph.ops.push_back(std::move(kernel));
    return;
  }
  const JsonReader outputs = item.at("outputs");
  for (const JsonReader& field : outputs.items()) kernel.outputs.push_back(readDefinition(field));
  if (kernel.outputs.empty()) outputs.fail("a block graph writes at least one tensor");
  kernel.block = readBlockGraph(item, kernel);
  schedule_.graph.ops.push_back(std::move(kernel));
}

BlockGraph ScheduleReader::readBlockGraph(const JsonReader& item, const KernelOp& kernel) const {
  BlockGraph block;
  if (std::optional<JsonReader> grid = item.find("grid")) {
    grid->expectObject({"x", "y", "z"});
    for (int axis = 0; axis < kGridAxes; ++axis) {
      if (std::optional<JsonReader> size = grid->find(gridAxisName(axis))) {
        block.grid[axis] = size->integer(1, maxGridExtent(axis));
      }
    }
  }
  if (std::optional<JsonReader> cluster = item.find("cluster")) {
    cluster->expectObject({"x", "y", "z"});
    for (int axis = 0; axis < kGridAxes; ++axis) {
      if (std::optional<JsonReader> size = cluster->find(gridAxisName(axis))) {
        block.cluster[axis] = size->integer(1, maxGridExtent(axis));
      }
    }
  }
  if (std::optional<JsonReader> threads = item.find("threads")) {
    block.threads = static_cast<int>(threads->integer(1, kMaxDimSize));
  }
  if (std::optional<JsonReader> occupancy = item.find("occupancy")) {
    block.occupancy = static_cast<int>(occupancy->integer(1, kMaxThreadsPerSm / kWarpSize));
  }
  if (std::optional<JsonReader> forloop = item.find("forloop")) {
    block.forloop = forloop->integer(1, kMaxDimSize);
  }
  const JsonReader ops = item.at("ops");
  const std::map<std::string, std::string> sites = definitionSites(ops, "output");
  std::map<std::string, TensorId> tiles;
  for (const JsonReader& op : ops.items()) readBlockOp(op, kernel, block, tiles, sites);
  auto tileOf = [&](const JsonReader& use) {
    const std::string name = use.tensorName();
    auto id = tiles.find(name);
    if (id == tiles.end()) use.fail("unknown tile '" + name + "'");
    return id->second;
  };
  if (std::optional<JsonReader> fusion = item.find("fusion")) {
    for (const JsonReader& group : fusion->items()) {
      group.expectObject({"producer", "fused"});
      FusionGroup result;
      result.producer = tileOf(group.at("producer"));
      for (const JsonReader& use : group.at("fused").items()) result.fused.push_back(tileOf(use));
      block.fusion.push_back(std::move(result));
    }
  }
  return block;
}

void ScheduleReader::readBlockOp(const JsonReader& item, const KernelOp& kernel, BlockGraph& block,
                                 std::map<std::string, TensorId>& tiles,
                                 const std::map<std::string, std::string>& sites) const {
  const KernelGraph& graph = schedule_.graph;
  BlockOp op;
  op.kind = readOpKind(item, OpLevel::Block);
  auto readTile = [&](const JsonReader& use) {
    const std::string name = use.tensorName();
    auto id = tiles.find(name);
    if (id == tiles.end()) failUse(use, "tile", name, sites);
    return id->second;
  };
  auto position = [&](const JsonReader& field, const std::vector<TensorId>& list,
                      const char* role) {
    const std::string name = field.tensorName();
    for (size_t i = 0; i < list.size(); ++i) {
      if (graph.tensors[list[i]].name == name) return static_cast<int>(i);
    }
    field.fail("'" + name + "' is not one of this kernel's " + role);
  };
  auto failAtField = [&](const std::string& field, const std::string& reason) {
    throw UserError(item.source() + ": " + item.path() + "." + field, reason);
  };
  if (op.kind == OpKind::Output) {
    item.expectObject({"op", "inputs", "to", "omap"});
    const std::vector<JsonReader> inputs = item.at("inputs").items();
    if (inputs.size() != 1) item.at("inputs").fail("output takes exactly one tile");
    op.inputs.push_back(readTile(inputs[0]));
    op.kernelTensor = position(item.at("to"), kernel.outputs, "outputs");
    if (std::optional<JsonReader> omap = item.find("omap")) op.omap = readAxisMap(*omap);
    const BlockTensor& tile = block.tensors[op.inputs[0]];
    try {
      std::vector<Dims> inputShapes;
      for (TensorId t : kernel.inputs) inputShapes.push_back(graph.tensors[t].shape);
      const std::vector<TileSplit> splits = blockTileSplits(block, inputShapes);
      outputDeviceShape(tile.shape, tile.name, block, op, &splits.at(op.inputs[0]));
    } catch (const ShapeError& e) {
      failAtField(tileErrorField(tile.shape, block, op), e.what());
    }
    block.ops.push_back(std::move(op));
    return;
  }
  BlockTensor result;
  if (op.kind == OpKind::Input) {
    item.expectObject({"op", "from", "output", "imap", "fmap", "tile"});
    op.kernelTensor = position(item.at("from"), kernel.inputs, "inputs");
    if (std::optional<JsonReader> imap = item.find("imap")) op.imap = readAxisMap(*imap);
    if (std::optional<JsonReader> fmap = item.find("fmap")) {
      op.fmap = static_cast<int>(fmap->integer(kReplicated, kMaxRank - 1));
    }
    if (std::optional<JsonReader> tile = item.find("tile")) {
      for (const JsonReader& dim : tile->items()) op.tile.push_back(dim.integer(1, kMaxDimSize));
    }
    const TensorDesc& source = graph.tensors[kernel.inputs[op.kernelTensor]];
    result.dtype = source.dtype;
    try {
      result.shape = inputTileShape(source.shape, source.name, block, op);
    } catch (const ShapeError& e) {
      const bool declaredTile = std::string_view(e.what()).rfind("tile ", 0) == 0;
      failAtField(declaredTile ? "tile" : tileErrorField(source.shape, block, op), e.what());
    }
  } else {
    std::vector<std::string_view> keys{"op", "inputs", "output"};
    for (std::string_view key : attrKeys(op.kind)) keys.push_back(key);
    op.attrs = readAttrs(item, op.kind);
    item.expectObject(keys);
    std::vector<Operand> operands;
    const JsonReader inputs = item.at("inputs");
    for (const JsonReader& use : inputs.items()) op.inputs.push_back(readTile(use));
    for (TensorId t : op.inputs) {
      operands.push_back(
          Operand{block.tensors[t].name, block.tensors[t].dtype, block.tensors[t].shape});
    }
    try {
      const Inferred inferred = inferOp(op.kind, op.attrs, operands);
      result.shape = inferred.shape;
      result.dtype = inferred.dtype;
    } catch (const ShapeError& e) {
      item.fail(e.what());
    }
  }
  const JsonReader output = item.at("output");
  result.name = output.tensorName();
  if (tiles.count(result.name)) output.fail("duplicate tile '" + result.name + "'");
  op.output = static_cast<TensorId>(block.tensors.size());
  tiles[result.name] = op.output;
  block.tensors.push_back(std::move(result));
  block.ops.push_back(std::move(op));
}

void ScheduleReader::readOutputs() {
  KernelGraph& graph = schedule_.graph;
  for (const JsonReader& use : top_.at("outputs").items()) graph.outputs.push_back(readUse(use));
  const JsonReader list = top_.at("tensors");
  const std::vector<JsonReader> items = list.items();
  for (size_t t = 0; t < graph.tensors.size(); ++t) {
    if (!defined_[t]) {
      items[t].fail("tensor '" + graph.tensors[t].name +
                    "' is neither a program input nor written by any kernel");
    }
  }
}

[[noreturn]] void failAtLocation(const JsonReader& top, const Schedule& schedule,
                                 const IrError& error) {
  IrLocation where = error.location();
  std::string root = top.path();
  std::string section = where.section;
  const std::string programPrefix = "program.";
  if (section.rfind(programPrefix, 0) == 0) {
    root += ".program";
    section = section.substr(programPrefix.size());
  }
  const bool predefinedKernel = section == "kernels" && where.index >= 0 &&
                                where.index < static_cast<int>(schedule.graph.ops.size()) &&
                                schedule.graph.ops[where.index].kind != OpKind::BlockGraph;
  if ((predefinedKernel || section == "ops") && where.field == "outputs") where.field = "output";
  throw UserError(top.source() + ": " + jsonPathOf(root, section, where), error.what());
}

}  // namespace

nlohmann::json scheduleToJson(const Schedule& schedule) {
  const KernelGraph& graph = schedule.graph;
  json tensors = json::array();
  for (const TensorDesc& desc : graph.tensors)
    tensors.push_back(tensorDescToJson(desc, graph.dims));
  json kernels = json::array();
  for (const KernelOp& kernel : graph.ops) kernels.push_back(kernelToJson(graph, kernel));
  json outputs = json::array();
  for (TensorId t : graph.outputs) outputs.push_back(graph.tensors[t].name);
  return json{{"format", kScheduleFormat},     {"version", kFormatVersion},
              {"name", schedule.name},         {"program", programToJson(schedule.program)},
              {"tensors", std::move(tensors)}, {"kernels", std::move(kernels)},
              {"outputs", std::move(outputs)}, {"hash", hashHex(scheduleHash(schedule))}};
}

Schedule scheduleFromJson(const nlohmann::json& json, const std::string& sourceName) {
  const JsonReader top(json, sourceName, "$");
  top.checkFormatAndVersion(kScheduleFormat, "schedule");
  top.expectObject(
      {"format", "version", "name", "program", "tensors", "kernels", "outputs", "hash"});
  Schedule schedule;
  if (std::optional<JsonReader> name = top.find("name")) schedule.name = name->graphName();
  schedule.graph.name = schedule.name;
  schedule.program = programFromJson(top.at("program").value(), sourceName, "$.program");
  ScheduleReader reader(top, schedule);
  reader.readTensors();
  for (const JsonReader& item : top.at("kernels").items()) reader.readKernel(item);
  reader.readOutputs();
  try {
    validateSchedule(schedule);
  } catch (const IrError& e) {
    failAtLocation(top, schedule, e);
  }
  top.checkHash(scheduleHash(schedule));
  return schedule;
}

}  // namespace mugraph::graph
