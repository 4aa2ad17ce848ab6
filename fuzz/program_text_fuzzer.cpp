// `.mg` program text, read as `mugraph` reads a program file. An accepted program must also
// print as text and as JSON that read back as the same program.
#include "fuzz/fuzz_input.h"
#include "graph/files.h"
#include "graph/hash.h"
#include "graph/json_format.h"
#include "graph/program_text.h"

using namespace mugraph;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::writeInput(data, size, ".mg");
  graph::Program program;
  if (!fuzz::acceptsOrRefuses([&] { program = graph::loadProgram(path); })) return 0;
  const uint64_t hash = graph::programHash(program);
  graph::Program fromText, fromJson;
  fuzz::require(fuzz::acceptsOrRefuses([&] {
                  fromText = graph::parseProgramText(graph::programToText(program), "text");
                }),
                "an accepted program's text does not read back");
  fuzz::require(graph::programHash(fromText) == hash, "the program's text reads back different");
  fuzz::require(fuzz::acceptsOrRefuses([&] {
                  fromJson = graph::programFromJson(graph::programToJson(program), "json");
                }),
                "an accepted program's JSON does not read back");
  fuzz::require(graph::programHash(fromJson) == hash, "the program's JSON reads back different");
  return 0;
}
