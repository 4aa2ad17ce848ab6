// Program and schedule JSON ("mugraph.program", "mugraph.schedule"), read as `mugraph` reads
// a file. An accepted program or schedule must write JSON (and a program .mg text) that reads
// back the same.
#include "fuzz/fuzz_input.h"
#include "graph/files.h"
#include "graph/hash.h"
#include "graph/json_format.h"

using namespace mugraph;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::writeInput(data, size, ".json");
  graph::LoadedFile loaded;
  if (!fuzz::acceptsOrRefuses([&] { loaded = graph::loadFile(path); })) return 0;
  if (loaded.schedule) {
    const nlohmann::json written = graph::scheduleToJson(*loaded.schedule);
    fuzz::require(!written.dump().empty(), "a schedule writes no JSON");
    graph::Schedule again;
    fuzz::require(fuzz::acceptsOrRefuses([&] { again = graph::scheduleFromJson(written, "json"); }),
                  "an accepted schedule's JSON does not read back");
    fuzz::require(graph::scheduleHash(again) == graph::scheduleHash(*loaded.schedule),
                  "the schedule's JSON reads back different");
    return 0;
  }
  // Saved as .mg text (or refused with a UserError where a name cannot be spelled there), it
  // reads back the same.
  const std::string text = path + ".mg";
  if (fuzz::acceptsOrRefuses([&] { graph::saveProgram(text, loaded.program); })) {
    fuzz::require(
        graph::programHash(graph::loadProgram(text)) == graph::programHash(loaded.program),
        "the program's .mg text reads back different");
  }
  const nlohmann::json written = graph::programToJson(loaded.program);
  fuzz::require(!written.dump().empty(), "a program writes no JSON");
  graph::Program again;
  fuzz::require(fuzz::acceptsOrRefuses([&] { again = graph::programFromJson(written, "json"); }),
                "an accepted program's JSON does not read back");
  fuzz::require(graph::programHash(again) == graph::programHash(loaded.program),
                "the program's JSON reads back different");
  return 0;
}
