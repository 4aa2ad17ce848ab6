// The cost-calibration data (`mugraph calibrate DATA`) and a cost-constants file: an
// accepted data file is then evaluated by the cost model, as `mugraph calibrate` does.
#include <cmath>

#include "fuzz/fuzz_input.h"
#include "plan/target.h"
#include "search/cost_calibration.h"

using namespace mugraph;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::writeInput(data, size, ".json");
  fuzz::acceptsOrRefuses([&] { search::loadCostConstants(path); });
  search::CalibrationData calibration;
  if (!fuzz::acceptsOrRefuses([&] { calibration = search::loadCalibrationData(path); })) return 0;
  const search::CalibrationReport report =
      search::evaluateCostModel(calibration, plan::targetByName("sm_90"), search::CostConstants{});
  fuzz::require(report.programs.size() == calibration.programs.size(),
                "the report covers other programs than the data");
  return 0;
}
