// manifest.json and resources.json (see manifest.h).
#include "codegen/manifest.h"

#include "graph/dynamic_extents.h"
#include "graph/hash.h"
#include "graph/json_reader.h"

namespace mugraph::codegen {
namespace {

using nlohmann::json;

// The shape and the stored shape, a dynamic dim by its name.
std::pair<json, json> shapesJson(const graph::KernelGraph& graph, const graph::TensorDesc& desc) {
  if (desc.dynamicDims.empty()) {
    return {desc.shape, graph::storedShape(desc.shape, desc.layout)};
  }
  const json shape = graph::tensorDescToJson(desc, graph.dims)["shape"];
  graph::Dims logicalOf(desc.shape.size());
  for (size_t d = 0; d < logicalOf.size(); ++d) logicalOf[d] = static_cast<int64_t>(d);
  json stored = json::array();
  for (int64_t d : graph::storedShape(logicalOf, desc.layout)) stored.push_back(shape[d]);
  return {shape, stored};
}

json tensorJson(const GeneratedCode& code, const TensorBinding& binding) {
  const graph::KernelGraph& graph = code.schedule.graph;
  const graph::TensorDesc& desc = graph.tensors[binding.tensor];
  const auto [shape, stored] = shapesJson(graph, desc);
  // A tensor with dynamic dims has as many bytes as its length gives; a workspace tensor's
  // offset leaves room for its bytes at the range's max.
  const json bytes =
      desc.dynamicDims.empty()
          ? json(binding.bytes)
          : graph::dimProductJson(graph::elementProduct(desc).times(graph::dtypeBytes(desc.dtype)),
                                  graph);
  json out = {{"name", desc.name},
              {"role", roleName(binding.role)},
              {"dtype", std::string(graph::dtypeName(desc.dtype))},
              {"shape", shape},
              {"layout", std::string(graph::layoutName(desc.layout))},
              {"stored_shape", stored},
              {"bytes", bytes}};
  if (binding.role == TensorRole::Workspace) out["offset"] = binding.offset;
  return out;
}

json kernelResourcesJson(const KernelResources& r, int64_t dynamicSharedBytes) {
  return {{"entry", r.entry},
          {"registers", r.registers},
          {"spill_store_bytes", r.spillStoreBytes},
          {"spill_load_bytes", r.spillLoadBytes},
          {"static_shared_bytes", r.staticSharedBytes},
          {"dynamic_shared_bytes", dynamicSharedBytes},
          {"local_bytes", r.localBytes},
          {"barriers", r.barriers}};
}

// Everything cuTensorMapEncodeTiled needs (codegen/README.md, "Tensor maps"): the tensor
// whose address it takes, its element type, the dims and byte strides innermost first, the
// box, unit element strides, no interleave, the 128-byte swizzle, 256-byte L2 promotion and
// no out-of-bounds fill.
json tensorMapJson(const GeneratedCode& code, const plan::TensorMapDesc& map) {
  const graph::TensorDesc& desc = code.schedule.graph.tensors[map.tensor];
  json dims = json::array();
  json strides = json::array();
  json box = json::array();
  json elementStrides = json::array();
  for (int i = 0; i < map.rank; ++i) {
    // A dynamic dim's extent is its length: the map is encoded at launch (a product, `["m"]`).
    dims.push_back(map.dynamicDims[i] == graph::kStaticDim
                       ? json(map.dims[i])
                       : graph::dimProductJson({1, {map.dynamicDims[i]}}, code.schedule.graph));
    // A stride that follows a length is a product too (`[256, "s"]`).
    if (i > 0) {
      strides.push_back(map.strideProducts[i].isStatic()
                            ? json(map.strideBytes[i])
                            : graph::dimProductJson(map.strideProducts[i], code.schedule.graph));
    }
    box.push_back(map.box[i]);
    elementStrides.push_back(1);
  }
  return {{"kind", "tensor_map"},
          {"tensor", desc.name},
          {"dtype", std::string(graph::dtypeName(map.dtype))},
          {"rank", map.rank},
          {"dims", dims},
          {"strides_bytes", strides},
          {"box", box},
          {"element_strides", elementStrides},
          {"interleave", "none"},
          {"swizzle", std::to_string(map.swizzleBytes) + "B"},
          {"l2_promotion", "256B"},
          {"oob_fill", "none"}};
}

}  // namespace

json resourcesJson(const GeneratedCode& code) {
  json kernels = json::array();
  for (size_t k = 0; k < code.resources.size(); ++k) {
    kernels.push_back(
        kernelResourcesJson(code.resources[k], code.emitted.kernels[k].dynamicSharedBytes));
  }
  return {{"arch", code.resourceArch}, {"nvrtc", code.nvrtcVersion}, {"kernels", kernels}};
}

json manifestJson(const GeneratedCode& code) {
  const ScheduleAbi& abi = code.emitted.abi;
  json ptx = json::object();
  json options = json::object();
  for (const auto& [arch, text] : code.ptx) ptx[arch] = arch + ".ptx";
  for (const auto& [arch, list] : code.options) options[arch] = list;
  json tensors = json::array();
  for (const TensorBinding& binding : abi.tensors) tensors.push_back(tensorJson(code, binding));
  json kernels = json::array();
  for (size_t k = 0; k < abi.kernels.size(); ++k) {
    const KernelAbi& kernel = abi.kernels[k];
    const EmittedKernel& emitted = code.emitted.kernels[k];
    json params = json::array();
    for (const KernelParam& param : kernel.params) {
      json entry = tensorJson(code, abi.tensors[abi.bindingOf[param.tensor]]);
      entry["tensor"] = entry["name"];
      entry.erase("name");
      entry["access"] = param.written ? "write" : "read";
      entry["kind"] = "pointer";
      params.push_back(entry);
    }
    for (const plan::TensorMapDesc& map : emitted.tensorMaps)
      params.push_back(tensorMapJson(code, map));
    json grid = emitted.grid;
    if (emitted.launchCounts) {
      for (const graph::DynamicDim& dim : code.schedule.graph.dims) {
        params.push_back({{"kind", "dim"}, {"dim", dim.name}, {"dtype", "i32"}});
      }
      for (int axis = 0; axis < graph::kGridAxes; ++axis) {
        grid[axis] = graph::launchCountJson(emitted.launchCounts->grid[axis], code.schedule.graph);
      }
    }
    json entry{{"entry", kernel.entry},
               {"grid", grid},
               {"block", {emitted.threads, 1, 1}},
               {"dynamic_shared_bytes", emitted.dynamicSharedBytes},
               {"params", params}};
    // Informational: the kernel fixes its clusters itself (__cluster_dims__).
    if (emitted.cluster != std::array<int64_t, graph::kGridAxes>{1, 1, 1}) {
      entry["cluster"] = emitted.cluster;
    }
    kernels.push_back(std::move(entry));
  }
  json resources = json::array();
  for (size_t k = 0; k < code.resources.size(); ++k) {
    resources.push_back(
        kernelResourcesJson(code.resources[k], code.emitted.kernels[k].dynamicSharedBytes));
  }
  json manifest = {{"format", kManifestFormat},
                   {"version", kManifestVersion},
                   {"schedule", code.schedule.name},
                   {"schedule_hash", graph::hashHex(graph::scheduleHash(code.schedule))},
                   {"program_hash", graph::hashHex(graph::programHash(code.schedule.program))},
                   {"source", "kernel.cu"},
                   {"ptx", ptx},
                   {"tensors", tensors},
                   {"workspace_bytes", abi.workspaceBytes},
                   {"kernels", kernels},
                   // Every kernel starts with griddepcontrol.wait on sm_90 (codegen/README.md).
                   {"waits_for_prior_grids", true},
                   {"resources", {{code.resourceArch, resources}}},
                   {"nvrtc", {{"version", code.nvrtcVersion}, {"options", options}}}};
  if (!code.schedule.graph.dims.empty()) {
    manifest["dims"] = graph::dynamicDimsToJson(code.schedule.graph.dims);
  }
  return manifest;
}

}  // namespace mugraph::codegen
