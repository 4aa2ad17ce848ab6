// Times the verifier at real shapes, phase by phase, for the schedules named on the command
// line (default: the large shipped ones): one double evaluation of the program and of the
// schedule, the degree analysis (both graphs over the degree domain), one fingerprint trial
// (both graphs over the field), and the whole check as `mugraph check` runs it (float tests,
// degree, every trial), in wall seconds and, for the check, CPU seconds of all threads (on a
// shared machine the wall time depends on the load). Prints a table and writes JSON with the
// machine's threads and load.
//
//   build/bin/verify_scale_bench [--out FILE.json] [--no-check] [SCHEDULE.json ...]
#include <sys/resource.h>
#include <tbb/info.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "graph/files.h"
#include "verify/equivalence.h"
#include "verify/false_accept_bound.h"
#include "verify/scaled_twin.h"
#include "verify/fingerprint.h"
#include "verify/interpreter.h"
#include "verify/random_inputs.h"

namespace {

using Clock = std::chrono::steady_clock;

// User and system CPU seconds of this process so far (all threads).
double cpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto toSeconds = [](const timeval& t) { return t.tv_sec + t.tv_usec * 1e-6; };
  return toSeconds(usage.ru_utime) + toSeconds(usage.ru_stime);
}

template <class F>
double seconds(F&& body) {
  const auto start = Clock::now();
  body();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string loadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

// Multiply-adds of the program's matmuls.
}  // namespace

int main(int argc, char** argv) {
  namespace verify = mugraph::verify;
  std::string outPath = "verify_scale_bench.json";
  bool check = true;
  std::vector<std::string> schedules;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--out" && i + 1 < argc) {
      outPath = argv[++i];
    } else if (arg == "--no-check") {
      check = false;
    } else {
      schedules.push_back(arg);
    }
  }
  if (schedules.empty()) {
    const std::string root = std::string(MUGRAPH_SOURCE_DIR) + "/schedules/";
    for (const char* name : {"gemm_4096.warpgroups.json", "mha_prefill_2048.warpgroups.json",
                             "gqa_decode_64k.split_kv.json", "gemm_8192.warpgroups.json"}) {
      schedules.push_back(root + name);
    }
  }
  const std::string loadBefore = loadAverage();
  nlohmann::json results = nlohmann::json::array();
  std::printf("%-36s %9s %9s %9s %9s %9s %9s %9s  %s\n", "schedule", "GMAC", "dbl prog",
              "dbl sched", "degree", "trial", "check", "check cpu", "verdict");
  for (const std::string& path : schedules) {
    const mugraph::graph::Schedule s = mugraph::graph::loadSchedule(path);
    const double doubleProgram =
        seconds([&] { verify::evaluate(s.program, verify::randomInputs(s.program, 1)); });
    const double doubleSchedule =
        seconds([&] { verify::evaluate(s.graph, verify::randomInputs(s.program, 2)); });
    const double degree = seconds([&] { verify::differenceDegree(s.program, s.graph, 3); });
    const double trial = seconds([&] { verify::runFingerprintTrial(s.program, s.graph, 4); });
    verify::EquivalenceReport report;
    double checkSeconds = -1, checkCpuSeconds = -1;
    if (check) {
      const double cpuBefore = cpuSeconds();
      checkSeconds = seconds([&] {
        verify::EquivalenceOptions options;
        options.seed = 5;
        report = verify::checkEquivalence(s.program, s.graph, options);
      });
      checkCpuSeconds = cpuSeconds() - cpuBefore;
    }
    const std::string verdict =
        !check ? "-"
               : std::string(report.equivalent ? "equivalent" : "DIFFERENT") + ", " +
                     verify::levelName(report.level) + ", " + std::to_string(report.trials) +
                     " trials, bound " + std::to_string(report.falseAcceptBound) +
                     (report.scaledTwin.empty() ? "" : ", on a scaled twin");
    std::printf("%-36s %9.1f %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f  %s\n", s.name.c_str(),
                verify::matmulWork(s.program) / 1e9, doubleProgram, doubleSchedule, degree, trial,
                checkSeconds, checkCpuSeconds, verdict.c_str());
    std::fflush(stdout);
    results.push_back({{"schedule", s.name},
                       {"program_gmac", verify::matmulWork(s.program) / 1e9},
                       {"double_eval_program_seconds", doubleProgram},
                       {"double_eval_schedule_seconds", doubleSchedule},
                       {"degree_analysis_seconds", degree},
                       {"field_trial_seconds", trial},
                       {"check_seconds", checkSeconds},
                       {"check_cpu_seconds", checkCpuSeconds},
                       {"equivalent", report.equivalent},
                       {"level", verify::levelName(report.level)},
                       {"trials", report.trials},
                       {"degree", report.degree},
                       {"false_accept_bound", report.falseAcceptBound},
                       // The phases above run at the real shapes; the check on a scaled twin
                       // where it has one (verify/README.md), named here.
                       {"check_scaled_twin", report.scaledTwin}});
  }
  const nlohmann::json out = {{"threads", tbb::info::default_concurrency()},
                              {"hardware_threads", std::thread::hardware_concurrency()},
                              {"load_average_before", loadBefore},
                              {"load_average_after", loadAverage()},
                              {"results", results}};
  std::ofstream(outPath) << out.dump(2) << "\n";
  std::printf("threads %d, load average before %s, after %s; wrote %s\n",
              tbb::info::default_concurrency(), loadBefore.c_str(), loadAverage().c_str(),
              outPath.c_str());
  return 0;
}
