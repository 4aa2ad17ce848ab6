#include "dataset/dataset_layout.h"

#include "codegen/kernel_abi.h"
#include "graph/hash.h"

namespace mugraph::dataset {

std::string classId(const graph::Program& program) {
  const std::string name = program.name.empty() ? "program" : program.name;
  return codegen::sanitizeIdentifier(name) + "-" + graph::hashHex(graph::programHash(program));
}

}  // namespace mugraph::dataset
