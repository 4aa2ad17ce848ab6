#include "dataset/dataset_gpu_check.h"

#include <random>
#include <sstream>

#include "dataset/dataset_index.h"
#include "dataset/dataset_layout.h"
#include "graph/error.h"
#include "runtime/gpu_check.h"
#include "runtime/gpu_check_json.h"
#include "verify/random_inputs.h"

namespace mugraph::dataset {
namespace {

using nlohmann::json;

// The spreads every member is checked at: small uniform values, a normal spread, and for
// attention the logits real models reach (std 16), otherwise a narrower normal spread. Wider
// normal inputs overflow f16 in the programs' own outputs (a gated MLP's products), which
// would fail every member, ours included, and say nothing about any of them.
std::vector<runtime::GpuInputs> drawsFor(const graph::Program& program) {
  std::vector<runtime::GpuInputs> draws = {runtime::GpuInputs{0.5, std::nullopt, std::nullopt},
                                           runtime::GpuInputs{0.5, std::nullopt, 0.5}};
  try {
    verify::inputStdForLogitStd(program, 16.0);
    draws.push_back(runtime::GpuInputs{0.5, 16.0, std::nullopt});
  } catch (const UserError&) {
    draws.push_back(runtime::GpuInputs{0.5, std::nullopt, 0.25});
  }
  return draws;
}

struct MemberOutcome {
  json trials = json::array();
  json timing;  // the first draw's report, with timing
  bool matches = true;
  double worst = 0;
  double tolerance = 0;
  std::string reason;
};

void recordRow(json& row, const MemberOutcome& outcome, bool external, const std::string& device) {
  if (!outcome.timing.is_null()) row["gpu"] = outcome.timing;
  if (!external) return;
  json verification = {
      {"level", kEvidenceGpu},         {"status", outcome.matches ? kStatusPassed : kStatusFailed},
      {"equivalent", outcome.matches}, {"device", device},
      {"trials", outcome.trials},      {"worst_error", outcome.worst},
      {"tolerance", outcome.tolerance}};
  if (!outcome.matches) verification["reason"] = outcome.reason;
  row["verification"] = verification;
}

}  // namespace

DatasetGpuResult runDatasetOnGpu(const runtime::CudaDriver& driver, const std::string& dir,
                                 const std::vector<GpuMember>& members, bool record,
                                 std::map<std::string, json>& rows) {
  DatasetGpuResult result;
  std::map<std::string, std::vector<const GpuMember*>> byClass;
  for (const GpuMember& m : members) byClass[rows.at(m.key).value("class", "")].push_back(&m);
  std::random_device fresh;
  for (const auto& [cls, classMembers] : byClass) {
    std::map<std::string, MemberOutcome> outcomes;
    const std::vector<runtime::GpuInputs> draws = drawsFor(classMembers.front()->program);
    for (size_t d = 0; d < draws.size(); ++d) {
      const uint64_t seed = (static_cast<uint64_t>(fresh()) << 32) ^ fresh();
      const runtime::ProgramReference reference =
          runtime::referenceRun(classMembers.front()->program, seed, draws[d]);
      for (const GpuMember* m : classMembers) {
        MemberOutcome& outcome = outcomes[m->key];
        if (!outcome.reason.empty()) continue;  // it already failed to run
        try {
          const runtime::GpuCheckReport gpu = runtime::checkAgainstReference(
              driver, reference, dir + "/" + m->key, d == 0 ? kTimingRepetitions : 0);
          outcome.trials.push_back({{"inputs", gpu.inputs},
                                    {"seed", gpu.seed},
                                    {"matches", gpu.matches},
                                    {"max_rel_error", gpu.maxRelError},
                                    {"tolerance", gpu.tolerance}});
          if (d == 0) outcome.timing = runtime::gpuCheckReportJson(gpu);
          outcome.worst = std::max(outcome.worst, gpu.maxRelError);
          outcome.tolerance = std::max(outcome.tolerance, gpu.tolerance);
          if (!gpu.matches) {
            outcome.matches = false;
            std::ostringstream why;
            why << "does not match its program on the GPU: relative error " << gpu.maxRelError
                << " (tolerance " << gpu.tolerance << ") on inputs " << gpu.inputs;
            if (gpu.unwrittenElements > 0) why << ", " << gpu.unwrittenElements << " NaN";
            outcome.reason = why.str();
          }
        } catch (const std::exception& e) {
          outcome.matches = false;
          outcome.reason = std::string("does not run from its manifest: ") + e.what();
        }
      }
    }
    for (const GpuMember* m : classMembers) {
      const MemberOutcome& outcome = outcomes[m->key];
      ++result.runs;
      std::ostringstream line;
      line << m->key << ": " << (outcome.matches ? "matches" : "FAILS") << " on "
           << driver.deviceName() << " at " << outcome.trials.size() << " spreads, worst error "
           << outcome.worst << " (tolerance " << outcome.tolerance << ")";
      if (!outcome.timing.is_null()) {
        line << ", " << outcome.timing.at("timing").at("median_us").get<double>() << " us median";
      }
      result.lines.push_back(line.str());
      if (!outcome.matches) result.problems.push_back(m->key + ": " + outcome.reason);
      if (record) recordRow(rows.at(m->key), outcome, m->external, driver.deviceName());
    }
  }
  return result;
}

}  // namespace mugraph::dataset
