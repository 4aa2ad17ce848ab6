#include "tools/equivalence_report.h"

#include <random>
#include <sstream>

namespace mugraph::tools {

void addVerifyFlags(CLI::App& command, VerifyFlags& flags) {
  command
      .add_option("--trials", flags.trials,
                  "finite-field trials (default: fewest giving a false-accept bound <= 1e-12)")
      ->check(CLI::Range(1, 1000));
  command.add_option("--seed", flags.seed,
                     "seed of every random input (default: fresh; printed so a verdict replays)");
  command.add_flag("--json", flags.json, "print the verdict as one JSON object");
  command.add_flag("--full-size", flags.fullSize,
                   "check at the real shapes even where a scaled twin decides it "
                   "(verify/README.md, 'Scaled twins')");
}

verify::EquivalenceOptions optionsFromFlags(const VerifyFlags& flags) {
  verify::EquivalenceOptions options;
  options.trials = flags.trials;
  options.scaledTwin = !flags.fullSize;
  options.seed =
      flags.seed ? *flags.seed : (uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
  return options;
}

std::string reportToText(const std::string& title, const verify::EquivalenceReport& report) {
  std::ostringstream out;
  out << title << ": " << (report.equivalent ? "EQUIVALENT" : "NOT EQUIVALENT") << "\n";
  out << "  level               " << verify::levelName(report.level);
  if (!report.levelReason.empty()) out << " (" << report.levelReason << ")";
  out << "\n  trials              " << report.trials;
  if (report.resampledTrials) out << " (" << report.resampledTrials << " redrawn: zero divisor)";
  out << "\n  seed                " << report.seed << "\n";
  out << "  false-accept bound  " << report.falseAcceptBound << " (degree " << report.degree
      << ", per trial " << report.perTrialBound << ")\n";
  if (report.maxMeaning == "any") {
    out << "  max                 the outputs do not depend on what max returns "
           "(shift-invariant)\n";
  } else if (report.maxMeaning == "selection") {
    out << "  max                 selection by each trial's random total order\n";
  }
  out << "  max float error     " << report.maxRelError << " (relative, double)\n";
  if (!report.scaledTwin.empty()) {
    out << "  scaled twin         " << report.scaledTwin << " (map dims; "
        << report.scaledTwinWorkRatio << "x less matmul work; --full-size checks the real shapes)\n";
  }
  if (!report.mismatch.empty()) out << "  mismatch            " << report.mismatch << "\n";
  return out.str();
}

}  // namespace mugraph::tools
