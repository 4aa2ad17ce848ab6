#include "verify/equivalence_json.h"

namespace mugraph::verify {

nlohmann::json equivalenceReportJson(const EquivalenceReport& report) {
  nlohmann::json out = {{"equivalent", report.equivalent},
                        {"level", levelName(report.level)},
                        {"trials", report.trials},
                        {"resampled_trials", report.resampledTrials},
                        {"seed", report.seed},
                        {"degree", report.degree},
                        {"per_trial_bound", report.perTrialBound},
                        {"false_accept_bound", report.falseAcceptBound},
                        {"max_rel_error", report.maxRelError}};
  if (!report.levelReason.empty()) out["level_reason"] = report.levelReason;
  if (!report.mismatch.empty()) out["mismatch"] = report.mismatch;
  if (!report.maxMeaning.empty()) out["max_meaning"] = report.maxMeaning;
  if (!report.scaledTwin.empty()) {
    nlohmann::json dims = nlohmann::json::array();
    for (const ShrunkDim& d : report.scaledTwinDims) {
      dims.push_back({{"tensor", d.tensor},
                      {"dim", d.dim},
                      {"from", d.from},
                      {"to", d.to},
                      {"period", d.period}});
    }
    out["scaled_twin"] = {{"text", report.scaledTwin},
                          {"dims", dims},
                          {"work_ratio", report.scaledTwinWorkRatio}};
  }
  return out;
}

nlohmann::json rangeReportJson(const RangeReport& report) {
  nlohmann::json lengths = nlohmann::json::array();
  for (const LengthVerdict& v : report.lengths) {
    nlohmann::json item{
        {"dims", v.length.values}, {"cases", v.length.why}, {"equivalent", v.equivalent}};
    if (v.unreachable.empty()) {
      item["report"] = equivalenceReportJson(v.report);
    } else {
      item["unreachable"] = v.unreachable;
    }
    lengths.push_back(std::move(item));
  }
  return {{"equivalent", report.equivalent}, {"lengths", std::move(lengths)}};
}

}  // namespace mugraph::verify
