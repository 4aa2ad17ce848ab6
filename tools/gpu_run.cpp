#include "tools/gpu_run.h"

#include <sstream>

#include "codegen/runtime/cuda_driver.h"
#include "codegen/runtime/gpu_check.h"

namespace mugraph::tools {

nlohmann::json runScheduleOnGpu(const graph::Schedule& schedule, const std::string& dir,
                                uint64_t seed, int repetitions) {
  std::string whyNot;
  const auto driver = codegen::CudaDriver::open(whyNot);
  if (!driver) throw GpuUnavailable("cannot run on a GPU: " + whyNot);
  const codegen::GpuCheckReport r = codegen::checkOnGpu(*driver, schedule, dir, seed, repetitions);
  nlohmann::json outputs = nlohmann::json::object();
  for (const auto& [name, error] : r.outputErrors) outputs[name] = error;
  return {{"device", r.device},
          {"ptx_arch", r.ptxArch},
          {"seed", r.seed},
          {"matches", r.matches},
          {"max_rel_error", r.maxRelError},
          {"tolerance", r.tolerance},
          {"unwritten_elements", r.unwrittenElements},
          {"outputs", outputs},
          {"timing",
           {{"median_us", r.timing.medianMicroseconds},
            {"p10_us", r.timing.p10Microseconds},
            {"p90_us", r.timing.p90Microseconds},
            {"min_us", r.timing.minMicroseconds},
            {"repetitions", r.timing.repetitions}}}};
}

std::string describeGpuRun(const nlohmann::json& report) {
  std::ostringstream out;
  out << "gpu " << report.at("device").get<std::string>() << " (PTX "
      << report.at("ptx_arch").get<std::string>()
      << "): " << (report.at("matches").get<bool>() ? "matches the interpreter" : "DOES NOT MATCH")
      << "\n  max relative error " << report.at("max_rel_error").get<double>() << " (tolerance "
      << report.at("tolerance").get<double>() << ", seed " << report.at("seed").get<uint64_t>()
      << "), unwritten elements " << report.at("unwritten_elements").get<int64_t>() << "\n";
  const auto& t = report.at("timing");
  out << "  time median " << t.at("median_us").get<double>() << " us (p10 "
      << t.at("p10_us").get<double>() << ", p90 " << t.at("p90_us").get<double>() << ", "
      << t.at("repetitions").get<int>() << " graph replays)\n";
  return out.str();
}

}  // namespace mugraph::tools
