// The C API (capi/mugraph.h): thin wrappers that catch every exception at the boundary and turn
// it into an error code and a message.
#include "capi/mugraph.h"

#include <cstring>
#include <memory>
#include <string>

#include "graph/error.h"
#include "graph/json_reader.h"
#include "graph/version.h"
#include "onnx_import/graph_json.h"
#include "onnx_import/import_model.h"
#include "onnx_import/partition_json.h"
#include "runtime/cuda_driver.h"
#include "runtime/kernel_launcher.h"

struct mg_variant {
  std::unique_ptr<mugraph::runtime::KernelLauncher> launcher;
};

namespace {

thread_local std::string lastError;

// The driver, opened once per process on device 0's primary context.
const mugraph::runtime::CudaDriver& driver() {
  static std::string whyNot;
  static std::unique_ptr<mugraph::runtime::CudaDriver> opened =
      mugraph::runtime::CudaDriver::open(whyNot);
  if (!opened) throw mugraph::UserError("GPU", whyNot);
  return *opened;
}

char* copyString(const std::string& text) {
  char* copy = static_cast<char*>(std::malloc(text.size() + 1));
  if (!copy) throw std::bad_alloc();
  std::memcpy(copy, text.c_str(), text.size() + 1);
  return copy;
}

template <class F>
int guarded(F&& body) {
  try {
    lastError.clear();
    body();
    return MG_OK;
  } catch (const mugraph::UserError& e) {
    lastError = e.what();
    return MG_USER_ERROR;
  } catch (const std::exception& e) {
    lastError = std::string("internal error: ") + e.what();
    return MG_INTERNAL_ERROR;
  }
}

}  // namespace

extern "C" {

const char* mg_version(void) {
  static const std::string version = std::string("mugraph ") + mugraph::graph::kVersion;
  return version.c_str();
}

const char* mg_last_error(void) {
  return lastError.c_str();
}

void mg_free_string(char* text) {
  std::free(text);
}

int mg_partition(const char* graphJson, char** result) {
  return guarded([&] {
    if (!graphJson || !result) throw mugraph::UserError("mg_partition", "a null argument");
    const std::string source = "graph JSON";
    const nlohmann::json json = mugraph::graph::parseJsonText(graphJson, source);
    const mugraph::onnx_import::ImportedModel model = mugraph::onnx_import::partitionModel(
        mugraph::onnx_import::modelFromGraphJson(json, source));
    nlohmann::json subgraphs = nlohmann::json::array();
    for (const auto& s : model.subgraphs)
      subgraphs.push_back(mugraph::onnx_import::subgraphJson(s));
    const nlohmann::json out = {{"subgraphs", subgraphs},
                                {"unsupported", mugraph::onnx_import::leftOutJson(model)}};
    *result = copyString(out.dump());
  });
}

int mg_variant_open(const char* dir, mg_variant** variant) {
  return guarded([&] {
    if (!dir || !variant) throw mugraph::UserError("mg_variant_open", "a null argument");
    const std::string path(dir);
    auto v = std::make_unique<mg_variant>();
    v->launcher = std::make_unique<mugraph::runtime::KernelLauncher>(driver(), path);
    *variant = v.release();
  });
}

void mg_variant_close(mg_variant* variant) {
  delete variant;
}

int mg_variant_describe(const mg_variant* variant, char** result) {
  return guarded([&] {
    if (!variant || !result) throw mugraph::UserError("mg_variant_describe", "a null argument");
    const mugraph::runtime::KernelLauncher& l = *variant->launcher;
    nlohmann::json tensors = nlohmann::json::array();
    for (const mugraph::runtime::ManifestTensor* t : l.boundTensors()) {
      tensors.push_back({{"name", t->name},
                         {"role", t->role},
                         {"dtype", mugraph::graph::dtypeName(t->dtype)},
                         {"shape", t->shape},
                         {"layout", mugraph::graph::layoutName(t->layout)},
                         {"bytes", t->bytes}});
      if (!t->shapeDims.empty()) tensors.back()["shape_dims"] = t->shapeDims;
    }
    nlohmann::json dims = nlohmann::json::array();
    for (const mugraph::graph::DynamicDim& d : l.dims()) {
      dims.push_back({{"name", d.name}, {"min", d.min}, {"max", d.max}});
    }
    const nlohmann::json out = {{"schedule", l.manifest().schedule},
                                {"arch", l.ptxArch()},
                                {"workspace_bytes", l.manifest().workspaceBytes},
                                {"dims", dims},
                                {"tensors", tensors}};
    *result = copyString(out.dump());
  });
}

int mg_variant_launch(mg_variant* variant, const uint64_t* tensors, size_t count,
                      uint64_t workspace, void* stream) {
  return guarded([&] {
    if (!variant || (count && !tensors)) {
      throw mugraph::UserError("mg_variant_launch", "a null argument");
    }
    std::vector<CUdeviceptr> addresses(tensors, tensors + count);
    variant->launcher->launch(addresses, static_cast<CUdeviceptr>(workspace),
                              static_cast<CUstream>(stream));
  });
}

int mg_variant_launch_dims(mg_variant* variant, const uint64_t* tensors, size_t count,
                           const int64_t* lengths, size_t dim_count, uint64_t workspace,
                           void* stream) {
  return guarded([&] {
    if (!variant || (count && !tensors) || (dim_count && !lengths)) {
      throw mugraph::UserError("mg_variant_launch_dims", "a null argument");
    }
    const std::vector<mugraph::graph::DynamicDim>& dims = variant->launcher->dims();
    if (dim_count != dims.size()) {
      throw mugraph::UserError("mg_variant_launch_dims",
                               std::to_string(dim_count) + " lengths for " +
                                   std::to_string(dims.size()) + " dynamic dims");
    }
    mugraph::graph::DimValues values;
    for (size_t i = 0; i < dim_count; ++i) values[dims[i].name] = lengths[i];
    if (dim_count) variant->launcher->setLengths(values);
    std::vector<CUdeviceptr> addresses(tensors, tensors + count);
    variant->launcher->launch(addresses, static_cast<CUdeviceptr>(workspace),
                              static_cast<CUstream>(stream));
  });
}

}  // extern "C"
