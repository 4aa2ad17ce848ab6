// A class's program as a PyTorch module: the reference that kernel datasets for language
// models pair with a kernel (KernelBook's python_code, a popcorn prompt). `Model.forward`
// takes the tensors a member's kernel takes, in the program's input order and in storage
// layout (a `layout=transposed` input arrives with its last two dims swapped and is viewed
// back), computes in float32 and returns the outputs in their dtypes; `get_inputs()` draws
// inputs of the class's shapes. `native`: the inputs are not cast and the outputs keep the
// dtype computed in, so the module computes in the dtype its inputs arrive in (float64 inputs
// give a reference, the program's own dtype PyTorch's eager form; tools/python/program_bench.py).
#pragma once

#include <string>

#include "graph/ir.h"

namespace mugraph::dataset {

std::string pytorchProgram(const graph::Program& program, bool native = false);

}  // namespace mugraph::dataset
