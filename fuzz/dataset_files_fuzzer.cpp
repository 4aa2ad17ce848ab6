// A dataset's manifest.jsonl (strictly, as `mugraph dataset check` reads it, and leniently,
// as a resumed build does) and its classes.json: the same bytes go to both readers.
#include "dataset/dataset_rows.h"
#include "fuzz/fuzz_input.h"

using namespace mugraph;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::writeInput(data, size, ".jsonl");
  std::map<std::string, nlohmann::json> strict, lenient;
  const bool accepted =
      fuzz::acceptsOrRefuses([&] { strict = dataset::readManifestRows(path, true); });
  fuzz::acceptsOrRefuses([&] { lenient = dataset::readManifestRows(path, false); });
  // The lenient reader drops only what the strict one refuses.
  if (accepted) fuzz::require(strict == lenient, "strict and lenient rows differ");
  for (const auto& entry : lenient) {
    const nlohmann::json& row = entry.second;
    fuzz::acceptsOrRefuses([&] { dataset::rowFilesIntact("/nonexistent/dataset", row); });
  }
  fuzz::acceptsOrRefuses([&] { dataset::readClassesFile(path); });
  return 0;
}
