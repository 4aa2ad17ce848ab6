// Reads the manifest.json that `mugraph replay` writes next to a schedule's PTX: everything a
// client needs to launch the kernels (see codegen/README.md for the ABI). The runtime reads
// it like any outside client would, so the manifest alone is known to suffice.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "graph/dynamic_dims.h"
#include "graph/types.h"

namespace mugraph::runtime {

struct ManifestTensor {
  std::string name;
  std::string role;  // "input", "output" or "workspace"
  graph::DType dtype = graph::DType::F32;
  graph::Dims shape;
  // Per dim of shape, the dynamic dim whose length it is, or "" where static; empty for a
  // tensor of static shape.
  std::vector<std::string> shapeDims;
  graph::Layout layout = graph::Layout::RowMajor;
  int64_t bytes = 0;
  int64_t offset = 0;  // workspace tensors: byte offset into the workspace
};

// A tensor map parameter (codegen/README.md, "Tensor maps"), dims innermost first.
struct ManifestTensorMap {
  std::string tensor;
  graph::DType dtype = graph::DType::F16;
  int rank = 0;
  std::array<uint64_t, 5> dims{};
  std::array<uint64_t, 5> strideBytes{};  // of dims 1..rank-1, at [0]..[rank-2]
  std::array<uint32_t, 5> box{};
  int swizzleBytes = 0;  // 0 (none), 32, 64 or 128
};

struct ManifestKernel {
  std::string entry;
  std::array<unsigned, 3> grid{1, 1, 1};
  std::array<unsigned, 3> block{1, 1, 1};
  unsigned dynamicSharedBytes = 0;
  std::vector<std::string> params;            // pointer parameters: tensor names, in order
  std::vector<ManifestTensorMap> tensorMaps;  // passed by value after the pointers
  std::vector<int32_t> dimArguments;          // the lengths of the dynamic dims, after the maps
};

struct Manifest {
  std::string schedule;
  std::string scheduleHash;
  std::map<std::string, std::string> ptx;  // "sm_80" -> file name
  std::vector<ManifestTensor> tensors;
  int64_t workspaceBytes = 0;
  std::vector<ManifestKernel> kernels;
  // The kernels wait for the grids before them themselves (griddepcontrol.wait, sm_90 PTX), so
  // they may be launched with programmatic stream serialization; false in older manifests.
  bool waitsForPriorGrids = false;
  // The dynamic dims' lengths the shapes, bytes, grids and dim arguments above were evaluated
  // at (a manifest of kernels that take the lengths); empty for a static manifest.
  graph::DimValues dims;

  const ManifestTensor& tensor(const std::string& name) const;
};

// UserError naming the file and JSON path of the first problem. A manifest with "dims" (kernels
// that take the lengths, codegen/README.md) is read at `dims`, one length per dim inside its
// range (graph/dynamic_extents.h evaluates its products and counts); a static one takes none.
Manifest readManifest(const std::string& path, const graph::DimValues& dims = {});

// The same in two steps, for a client that launches one manifest at many lengths: the file's
// JSON once, then the manifest it describes at each length (`path` names it in errors).
nlohmann::json readManifestDocument(const std::string& path);
Manifest manifestAt(const nlohmann::json& document, const std::string& path,
                    const graph::DimValues& dims);
// Its "dims" (each with its range), in order; empty for a static manifest.
std::vector<graph::DynamicDim> manifestDims(const nlohmann::json& document,
                                            const std::string& path);

}  // namespace mugraph::runtime
