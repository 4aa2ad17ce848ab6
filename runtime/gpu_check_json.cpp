#include "runtime/gpu_check_json.h"

namespace mugraph::runtime {

nlohmann::json gpuCheckReportJson(const GpuCheckReport& report) {
  nlohmann::json outputs = nlohmann::json::object();
  for (const auto& [name, error] : report.outputErrors) outputs[name] = error;
  const TimingStats& t = report.timing;
  return {{"device", report.device},
          {"ptx_arch", report.ptxArch},
          {"seed", report.seed},
          {"inputs", report.inputs},
          {"matches", report.matches},
          {"max_rel_error", report.maxRelError},
          {"tolerance", report.tolerance},
          {"unwritten_elements", report.unwrittenElements},
          {"written_past_end", report.writtenPastEnd},
          {"outputs", outputs},
          {"timing",
           {{"median_us", t.medianMicroseconds},
            {"p10_us", t.p10Microseconds},
            {"p90_us", t.p90Microseconds},
            {"min_us", t.minMicroseconds},
            {"repetitions", t.repetitions}}}};
}

}  // namespace mugraph::runtime
