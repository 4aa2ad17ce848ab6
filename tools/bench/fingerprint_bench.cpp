// Times the verifier on the shipped schedules at their real shapes: one evaluation of the
// schedule over the finite field, one whole fingerprint trial (program and schedule), the
// degree analysis, one double evaluation, and the whole check (float tests, then fingerprints,
// as `mugraph verify` runs it) with its level. A schedule whose ops leave the field fragment
// shows "-" for the field columns. Prints a table and writes JSON.
//
//   build/bin/fingerprint_bench [--out bench_fingerprint.json] [--repeats 3]
#include <tbb/info.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "graph/files.h"
#include "verify/equivalence.h"
#include "verify/false_accept_bound.h"
#include "verify/fingerprint.h"
#include "verify/finite_field.h"
#include "verify/interpreter.h"
#include "verify/random_inputs.h"

namespace {

using Clock = std::chrono::steady_clock;

template <class F>
double medianSeconds(int repeats, F&& body) {
  std::vector<double> times;
  for (int r = 0; r < repeats; ++r) {
    const auto start = Clock::now();
    body(r);
    times.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// The median time of `body`, or -1 when the computation leaves the field fragment.
template <class F>
double fieldSeconds(int repeats, F&& body) {
  try {
    return medianSeconds(repeats, body);
  } catch (const mugraph::verify::OutsideFieldFragment&) {
    return -1.0;
  }
}

void printSeconds(double seconds) {
  if (seconds < 0)
    std::printf(" %14s", "-");
  else
    std::printf(" %14.3f", seconds);
}

}  // namespace

int main(int argc, char** argv) {
  std::string outPath = "bench_fingerprint.json";
  int repeats = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--out")
      outPath = argv[i + 1];
    else if (flag == "--repeats")
      repeats = std::max(1, std::stoi(argv[i + 1]));
  }
  const std::string root = MUGRAPH_SOURCE_DIR;
  const std::vector<std::string> schedules = {"gqa_mirage.split_kv.json", "gemm_1024.tiled.json",
                                              "found/rmsnorm_matmul.v0fc52f7489c5ac2b.json"};
  nlohmann::json results = nlohmann::json::array();
  std::printf("%-44s %14s %14s %14s %14s %14s  %s\n", "schedule", "field eval s", "field trial s",
              "degree s", "double eval s", "check s", "level");
  for (const std::string& name : schedules) {
    const mugraph::graph::Schedule s = mugraph::graph::loadSchedule(root + "/schedules/" + name);
    const double fieldEval = fieldSeconds(repeats, [&](int r) {
      const auto inputs = mugraph::verify::randomFieldInputs(s.program, 1000 + r);
      mugraph::verify::evaluate(s.graph, inputs);
    });
    const double fieldTrial = fieldSeconds(repeats, [&](int r) {
      mugraph::verify::runFingerprintTrial(s.program, s.graph, 2000 + r);
    });
    const double degree = fieldSeconds(
        1, [&](int r) { mugraph::verify::differenceDegree(s.program, s.graph, 3000 + r); });
    const double doubleEval = medianSeconds(repeats, [&](int r) {
      const auto inputs = mugraph::verify::randomInputs(s.program, 4000 + r);
      mugraph::verify::evaluate(s.graph, inputs);
    });
    mugraph::verify::EquivalenceReport check;
    const double checkTime = medianSeconds(repeats, [&](int r) {
      mugraph::verify::EquivalenceOptions options;
      options.seed = 5000 + r;
      check = mugraph::verify::checkEquivalence(s.program, s.graph, options);
    });
    const char* level = mugraph::verify::levelName(check.level);
    std::printf("%-44s", name.c_str());
    for (double seconds : {fieldEval, fieldTrial, degree, doubleEval, checkTime})
      printSeconds(seconds);
    std::printf("  %s\n", level);
    results.push_back({{"schedule", name},
                       {"field_eval_seconds", fieldEval},
                       {"field_trial_seconds", fieldTrial},
                       {"degree_analysis_seconds", degree},
                       {"double_eval_seconds", doubleEval},
                       {"check_seconds", checkTime},
                       {"check_level", level},
                       {"check_trials", check.trials},
                       {"false_accept_bound", check.falseAcceptBound}});
  }
  const nlohmann::json report = {
      {"threads", tbb::info::default_concurrency()}, {"repeats", repeats}, {"results", results}};
  std::ofstream(outPath) << report.dump(2) << "\n";
  std::printf("threads %d; wrote %s\n", tbb::info::default_concurrency(), outPath.c_str());
  return 0;
}
