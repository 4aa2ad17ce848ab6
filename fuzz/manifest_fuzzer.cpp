// The manifest.json that `mugraph replay` writes next to a schedule's PTX, read as the
// runtime and `mugraph dataset check` read it.
#include "fuzz/fuzz_input.h"
#include "runtime/manifest_reader.h"

using namespace mugraph;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::writeInput(data, size, ".json");
  runtime::Manifest manifest;
  if (!fuzz::acceptsOrRefuses([&] { manifest = runtime::readManifest(path); })) return 0;
  // Every pointer parameter an accepted manifest lists names one of its tensors.
  for (const runtime::ManifestKernel& kernel : manifest.kernels) {
    for (const std::string& param : kernel.params) {
      fuzz::require(fuzz::acceptsOrRefuses([&] { manifest.tensor(param); }),
                    "an accepted manifest's kernel names an unknown tensor");
    }
  }
  return 0;
}
