#include "tools/gpu_run.h"

#include <limits>
#include <sstream>

#include "runtime/cuda_driver.h"
#include "runtime/gpu_check.h"
#include "runtime/gpu_check_json.h"

namespace mugraph::tools {
namespace {

// The report writes an infinite error as null (JSON has no infinity).
double errorOf(const nlohmann::json& value) {
  return value.is_null() ? std::numeric_limits<double>::infinity() : value.get<double>();
}

}  // namespace

nlohmann::json runScheduleOnGpu(const graph::Schedule& schedule, const std::string& dir,
                                uint64_t seed, int repetitions, std::optional<double> logitStd,
                                const graph::DimValues& dims) {
  std::string whyNot;
  const auto driver = runtime::CudaDriver::open(whyNot);
  if (!driver) throw GpuUnavailable("cannot run on a GPU: " + whyNot);
  return runtime::gpuCheckReportJson(
      runtime::checkOnGpu(*driver, schedule, dir, seed, repetitions,
                          runtime::GpuInputs{0.5, logitStd, std::nullopt}, dims));
}

std::string describeGpuRun(const nlohmann::json& report) {
  std::ostringstream out;
  out << "gpu " << report.at("device").get<std::string>() << " (PTX "
      << report.at("ptx_arch").get<std::string>()
      << "): " << (report.at("matches").get<bool>() ? "matches the interpreter" : "DOES NOT MATCH")
      << "\n  max relative error " << errorOf(report.at("max_rel_error")) << " (tolerance "
      << report.at("tolerance").get<double>() << ", seed " << report.at("seed").get<uint64_t>()
      << ", inputs " << report.at("inputs").get<std::string>() << "), unwritten elements "
      << report.at("unwritten_elements").get<int64_t>();
  const auto& overrun = report.at("written_past_end");
  out << (overrun.empty() ? ", nothing written past the end of a tensor"
                          : ", WRITTEN PAST THE END OF " + overrun.dump())
      << "\n";
  const auto& t = report.at("timing");
  out << "  time median " << t.at("median_us").get<double>() << " us (p10 "
      << t.at("p10_us").get<double>() << ", p90 " << t.at("p90_us").get<double>() << ", "
      << t.at("repetitions").get<int>() << " graph replays)\n";
  return out.str();
}

}  // namespace mugraph::tools
