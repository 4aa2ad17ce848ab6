// Random program inputs. The uniform draw is done by hand from mt19937_64's bits (not
// std::uniform_real_distribution, whose output differs between standard libraries) so a seed
// means the same inputs everywhere.
#include "verify/random_inputs.h"

#include <random>

namespace mugraph::verify {

TensorMap<double> randomInputs(const graph::Program& program, uint64_t seed, double scale) {
  std::mt19937_64 generator(seed);
  TensorMap<double> inputs;
  for (graph::TensorId id : program.inputs) {
    const graph::TensorDesc& desc = program.tensors.at(id);
    HostTensor<double> tensor{desc.shape, std::vector<double>(graph::elementCount(desc.shape))};
    for (double& value : tensor.data) {
      const double unit = static_cast<double>(generator() >> 11) * 0x1.0p-53;  // [0, 1)
      value = scale * (2.0 * unit - 1.0);
    }
    inputs[desc.name] = std::move(tensor);
  }
  return inputs;
}

}  // namespace mugraph::verify
