// Helpers shared by the plan tests: the target they plan for.
#pragma once

#include "plan/target.h"

namespace mugraph::plan::testing {

inline const Target& testTarget() {
  return targetByName(kDefaultTarget);
}

}  // namespace mugraph::plan::testing
