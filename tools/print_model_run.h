// What `mugraph superoptimize model.onnx` prints of driver::runModel: the summary as JSON, or
// a line per subgraph and per node left to the framework; and its exit code.
#pragma once

#include "driver/superoptimize.h"

namespace mugraph::tools {

// 3 when a subgraph hit an internal error, else 1 when a subgraph has no verified variant,
// else 0.
int printModelRun(const driver::ModelRun& run, bool json);
// That exit code alone (the ranks other than 0 under mpirun print nothing).
int modelExitCode(const driver::ModelRun& run);

}  // namespace mugraph::tools
