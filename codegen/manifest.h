// manifest.json: everything a client (the CUDA driver, CuPy, PyTorch) needs to launch the
// generated PTX: the tensors and their roles, the workspace, each kernel's entry, grid,
// block, dynamic shared memory and parameter list in launch order, the ptxas resources and
// the NVRTC that produced it. Format "mugraph.manifest", version 1; see codegen/README.md.
#pragma once

#include <nlohmann/json.hpp>

#include "codegen/generate.h"

namespace mugraph::codegen {

inline constexpr const char* kManifestFormat = "mugraph.manifest";
inline constexpr int kManifestVersion = 1;

nlohmann::json manifestJson(const GeneratedCode& code);
nlohmann::json resourcesJson(const GeneratedCode& code);  // resources.json

}  // namespace mugraph::codegen
