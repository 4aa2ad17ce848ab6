// The reference interpreter instantiated for double, the domain of float tests. Other domains
// (the finite field of fingerprints) instantiate interpreter_impl.h in their own file.
#include "verify/interpreter_impl.h"

namespace mugraph::verify {

template TensorMap<double> evaluate<double>(const graph::KernelGraph& graph,
                                            const TensorMap<double>& inputs, const TrialMeaning&);
template HostTensor<double> applyOp<double>(graph::OpKind kind, const graph::OpAttrs& attrs,
                                            const std::vector<const HostTensor<double>*>& operands,
                                            const TrialMeaning&, const MaskFrame&);

}  // namespace mugraph::verify
