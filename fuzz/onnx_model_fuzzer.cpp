// ONNX models through the import and the partition (`mugraph superoptimize model.onnx` up to
// the search, which stays off). For an accepted model, everything the summary writes (names,
// ops, reasons, program text) must be writable JSON, and each subgraph's program text must
// read back: the checks that would otherwise fail after a whole search.
#include "fuzz/fuzz_input.h"
#include "graph/display_text.h"
#include "graph/program_text.h"
#include "onnx_import/import_model.h"

using namespace mugraph;

namespace {

void requireWritable(const std::string& text) {
  fuzz::require(graph::isValidUtf8(text), "an accepted model yields text that is not UTF-8");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::writeInput(data, size, ".onnx");
  onnx_import::ImportedModel model;
  if (!fuzz::acceptsOrRefuses([&] { model = onnx_import::importModel(path, {}); })) return 0;
  for (const onnx_import::Subgraph& s : model.subgraphs) {
    requireWritable(s.name);
    for (const std::string& node : s.nodes) requireWritable(node);
    for (const std::string& op : s.ops) requireWritable(op);
    for (const onnx_import::BoundInput& in : s.inputs) requireWritable(in.value + in.buffer);
    for (const onnx_import::BoundOutput& out : s.outputs) requireWritable(out.value);
    const std::string text = graph::programToText(s.program);
    requireWritable(text);
    fuzz::require(fuzz::acceptsOrRefuses([&] { graph::parseProgramText(text, s.name); }),
                  "a subgraph's program text does not read back");
  }
  for (const onnx_import::LeftOut& left : model.unsupported) {
    requireWritable(left.node + left.op + left.reason);
  }
  return 0;
}
