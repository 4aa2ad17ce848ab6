// The reference interpreter instantiated for the fingerprint domains: the finite field and
// the degree domain that bounds its false-accept probability. Same code as for double.
#include "verify/degree_domain.h"
#include "verify/finite_field.h"
#include "verify/interpreter_impl.h"

namespace mugraph::verify {

template TensorMap<FieldElement> evaluate<FieldElement>(const graph::KernelGraph& graph,
                                                        const TensorMap<FieldElement>& inputs,
                                                        const TrialMeaning&);
template TensorMap<DegreeValue> evaluate<DegreeValue>(const graph::KernelGraph& graph,
                                                      const TensorMap<DegreeValue>& inputs,
                                                      const TrialMeaning&);

}  // namespace mugraph::verify
