#include "verify/equivalence.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>

#include "graph/error.h"
#include "graph/hash.h"
#include "verify/false_accept_bound.h"
#include "verify/fingerprint.h"
#include "verify/interpreter.h"
#include "verify/random_inputs.h"
#include "verify/reference_cache.h"
#include "verify/relative_error.h"
#include "verify/scaled_twin.h"

namespace mugraph::verify {
namespace {

constexpr int kMaxResamplesPerTrial = 16;

// Independent sub-seeds for each test of one check, all replayable from the printed seed.
uint64_t subSeed(uint64_t seed, uint64_t stream) {
  uint64_t x = seed + 0x9e3779b97f4a7c15ULL * (stream + 1);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The uninterpreted ops (graph/ops.h) of both graphs, by name: "sqrt, silu".
std::string uninterpretedOps(const graph::KernelGraph& a, const graph::KernelGraph& b) {
  std::vector<std::string_view> names;
  const auto note = [&names](graph::OpKind kind) {
    const bool uninterpreted = graph::opInfo(kind).uninterpreted || kind == graph::OpKind::RmsNorm;
    const std::string_view name = kind == graph::OpKind::RmsNorm ? "sqrt" : graph::opName(kind);
    if (uninterpreted && std::find(names.begin(), names.end(), name) == names.end()) {
      names.push_back(name);
    }
  };
  for (const graph::KernelGraph* g : {&a, &b}) {
    for (const graph::KernelOp& op : g->ops) {
      note(op.kind);
      if (!op.block) continue;
      for (const graph::BlockOp& bop : op.block->ops) note(bop.kind);
    }
  }
  std::string text;
  for (std::string_view name : names) text += (text.empty() ? "" : ", ") + std::string(name);
  return text;
}

bool takesMax(const graph::KernelGraph& g) {
  const auto isMax = [](graph::OpKind kind) {
    return kind == graph::OpKind::ReduceMax || kind == graph::OpKind::AccumMax;
  };
  for (const graph::KernelOp& op : g.ops) {
    if (isMax(op.kind)) return true;
    if (!op.block) continue;
    for (const graph::BlockOp& bop : op.block->ops) {
      if (isMax(bop.kind)) return true;
    }
  }
  return false;
}

std::string describe(const graph::TensorDesc& t) {
  return std::string(graph::dtypeName(t.dtype)) + " " + graph::formatDims(t.shape);
}

void requireSameTensors(const graph::KernelGraph& a, const std::vector<graph::TensorId>& aIds,
                        const graph::KernelGraph& b, const std::vector<graph::TensorId>& bIds,
                        const char* role) {
  if (aIds.size() != bIds.size()) {
    throw UserError(std::string(role) + "s", "the reference has " + std::to_string(aIds.size()) +
                                                 ", the candidate " + std::to_string(bIds.size()));
  }
  for (graph::TensorId ta : aIds) {
    const graph::TensorDesc& da = a.tensors[ta];
    const graph::TensorDesc* db = nullptr;
    for (graph::TensorId tb : bIds) {
      if (b.tensors[tb].name == da.name) db = &b.tensors[tb];
    }
    if (!db) {
      throw UserError(std::string(role) + " '" + da.name + "'",
                      "the candidate has no such " + std::string(role));
    }
    if (db->shape != da.shape || db->dtype != da.dtype) {
      throw UserError(
          std::string(role) + " '" + da.name + "'",
          "is " + describe(da) + " in the reference but " + describe(*db) + " in the candidate");
    }
  }
}

// A fingerprint mismatch of graphs with uninterpreted ops may come from an identity of the
// real function that the schedule relies on; the report says so.
void explainUninterpreted(const graph::KernelGraph& reference, const graph::KernelGraph& candidate,
                          EquivalenceReport& report) {
  const std::string ops = uninterpretedOps(reference, candidate);
  if (ops.empty()) return;
  report.mismatch += " (fingerprints treat " + ops +
                     " as uninterpreted: equal arguments agree, but no identity of the real "
                     "function, such as sqrt(a·b) = sqrt(a)·sqrt(b), holds)";
}

}  // namespace

const char* levelName(VerificationLevel level) {
  return level == VerificationLevel::FiniteField ? "finite-field" : "float-only";
}

void requireSameInterface(const graph::KernelGraph& reference,
                          const graph::KernelGraph& candidate) {
  requireSameTensors(reference, reference.inputs, candidate, candidate.inputs, "input");
  requireSameTensors(reference, reference.outputs, candidate, candidate.outputs, "output");
}

namespace {

// Whether the reference's outputs depend on what max returns (outputsDependOnMax), on two
// draws: a dependent program agrees on both with probability at most (degree/p)², and that
// mistake can only refute a candidate, never accept one.
bool referenceDependsOnMax(const graph::KernelGraph& reference, uint64_t seed) {
  int draws = 0;
  for (uint64_t stream = 0; draws < 2; ++stream) {
    if (stream >= 2 + static_cast<uint64_t>(kMaxResamplesPerTrial)) {
      throw UserError("max probe", "every draw hit a zero divisor; the program divides by "
                                   "something that vanishes identically");
    }
    try {
      if (outputsDependOnMax(reference, subSeed(seed, stream))) return true;
      ++draws;
    } catch (const ZeroDivisorInTrial&) {
      // this draw hit a zero divisor: draw again
    }
  }
  return false;
}

// Float tests' draws per test where the reference is not finite, and the seed stream apart
// between redraws.
constexpr uint64_t kDomainDraws = 8;
constexpr uint64_t kDomainStream = uint64_t{1} << 20;

bool allFinite(const TensorMap<double>& outputs) {
  for (const auto& [name, tensor] : outputs) {
    for (double x : tensor.data) {
      if (!std::isfinite(x)) return false;
    }
  }
  return true;
}

// The whole check of `candidate` against `reference` at their own shapes.
EquivalenceReport checkAtShapes(const graph::KernelGraph& reference,
                                const graph::KernelGraph& candidate,
                                const EquivalenceOptions& options) {
  EquivalenceReport report;
  report.seed = options.seed;
  ReferenceEvaluations* cache = nullptr;
  if (options.referenceCache &&
      options.referenceCache->referenceHash() == graph::kernelGraphHash(reference)) {
    cache = options.referenceCache.get();
  }

  // Inputs drawn where the reference is not finite (the square root of a negative sum: an
  // epsilon a dynamic graph passes as an input, drawn with either sign) lie outside the
  // program's domain and say nothing of the candidate: drawn again, up to kDomainDraws times;
  // where every draw does, the test is left to the fingerprints.
  const auto floatTest = [&](const auto& draw, const std::string& what) {
    std::optional<TensorMap<double>> inputs, expected;
    for (uint64_t d = 0; d < kDomainDraws && !expected; ++d) {
      inputs = draw(d);
      TensorMap<double> outputs = evaluate(reference, *inputs);
      if (allFinite(outputs)) expected = std::move(outputs);
    }
    if (!expected) return;
    const double error = maxRelativeError(*expected, evaluate(candidate, *inputs));
    report.maxRelError = std::max(report.maxRelError, error);
    if (!(error <= options.floatTolerance)) {
      std::ostringstream why;
      why << "float test with " << what << ": relative error " << error << " exceeds "
          << options.floatTolerance;
      report.mismatch = why.str();
    }
  };
  for (size_t i = 0; i < options.floatScales.size(); ++i) {
    const double scale = options.floatScales[i];
    std::ostringstream what;
    what << "inputs in ±" << scale;
    floatTest(
        [&](uint64_t d) {
          return randomInputs(reference, subSeed(options.seed, i + kDomainStream * d), scale);
        },
        what.str());
  }
  if (!options.floatScales.empty() && report.mismatch.empty()) {
    for (size_t i = 0; i < options.floatLogitSpreads.size(); ++i) {
      const double spread = options.floatLogitSpreads[i];
      double stddev = 0;
      try {
        stddev = inputStdForLogitStd(reference, spread);
      } catch (const UserError&) {
        break;  // not an attention program
      }
      std::ostringstream what;
      what << "normal inputs, logit std " << spread;
      floatTest(
          [&](uint64_t d) {
            return normalInputs(reference, subSeed(options.seed, 50 + i + kDomainStream * d),
                                stddev);
          },
          what.str());
    }
  }

  if (!report.mismatch.empty()) {
    report.levelReason = "the float tests already disagree; no fingerprint was needed";
  } else {
    try {
      const DegreeReport degree =
          differenceDegree(reference, candidate, subSeed(options.seed, 99), cache);
      report.degree = degree.degree;
      uint64_t stream = 1000;
      // k trials with max meaning `meaning`, k from that meaning's bound; returns the first
      // mismatch, or "" when all agree.
      const auto runTrials = [&](MaxMeaning meaning) {
        const bool arbitraryMax = meaning == MaxMeaning::Any;
        report.perTrialBound = perTrialBound(degree, meaning);
        const int trials = options.trials.value_or(
            trialsForBound(report.perTrialBound, options.targetBound, options.maxTrials));
        report.trials = 0;
        for (int t = 0; t < trials; ++t) {
          for (int attempt = 0;; ++attempt) {
            try {
              const TrialOutcome outcome = runFingerprintTrial(
                  reference, candidate, subSeed(options.seed, stream++), cache, arbitraryMax);
              if (!outcome.match) return outcome.mismatch;
              break;
            } catch (const ZeroDivisorInTrial&) {
              ++report.resampledTrials;
              if (attempt + 1 >= kMaxResamplesPerTrial) {
                throw UserError("fingerprint trial " + std::to_string(t),
                                "every draw hit a zero divisor; the graphs divide by something "
                                "that vanishes identically");
              }
            }
          }
          ++report.trials;
        }
        return std::string();
      };
      if (!takesMax(reference) && !takesMax(candidate)) {
        report.mismatch = runTrials(MaxMeaning::Selection);  // no max: no tie either
      } else {
        // Outputs that agree whatever max returns (safe softmax: the max only shifts what
        // exp sees) are decided with max as a free random function; the bound then holds for
        // every meaning of max. Otherwise max selects by each trial's random total order.
        // Where the program's own outputs do not depend on max but the candidate's do, no
        // meaning of max makes them equal for every input: the candidate is refuted here.
        // Selection would accept it whenever each trial's order puts every max where the
        // candidate happens to be right (a missing rescale whose last tile holds one key is
        // right unless that key is some row's max).
        report.maxMeaning = "any";
        const std::string anyMismatch = runTrials(MaxMeaning::Any);
        if (!anyMismatch.empty()) {
          if (referenceDependsOnMax(reference, subSeed(options.seed, 98))) {
            report.maxMeaning = "selection";
            report.mismatch = runTrials(MaxMeaning::Selection);
          } else {
            report.mismatch = anyMismatch +
                              " with max as a free function, on which the program's outputs "
                              "do not depend (a shift that does not cancel: a missing or wrong "
                              "rescale)";
          }
        }
      }
      report.level = VerificationLevel::FiniteField;
      report.falseAcceptBound = falseAcceptBound(report.perTrialBound, report.trials);
      if (!report.mismatch.empty()) explainUninterpreted(reference, candidate, report);
    } catch (const OutsideFieldFragment& e) {
      report.level = VerificationLevel::FloatOnly;
      report.levelReason = e.what();
      report.trials = 0;
      report.perTrialBound = 1.0;
      report.falseAcceptBound = 1.0;
    }
  }
  if (report.level == VerificationLevel::FloatOnly && options.floatScales.empty() &&
      report.mismatch.empty()) {
    report.mismatch = "undecided: " + report.levelReason + " and no float test was asked for";
  }
  report.equivalent = report.mismatch.empty();
  return report;
}

}  // namespace

EquivalenceReport checkEquivalence(const graph::KernelGraph& reference,
                                   const graph::KernelGraph& candidate,
                                   const EquivalenceOptions& options) {
  requireSameInterface(reference, candidate);
  if (options.scaledTwin) {
    if (const std::optional<ScaledTwin> twin = scaledTwin(reference, candidate)) {
      // The reference's cached evaluations are of the real shapes: not these.
      EquivalenceOptions twinOptions = options;
      twinOptions.referenceCache = nullptr;
      EquivalenceReport report = checkAtShapes(twin->reference, twin->candidate, twinOptions);
      report.scaledTwin = twin->describe();
      report.scaledTwinDims = twin->dims;
      report.scaledTwinWorkRatio = twin->workRatio;
      if (!report.mismatch.empty()) report.mismatch += " (on the scaled twin: " + report.scaledTwin + ")";
      return report;
    }
  }
  return checkAtShapes(reference, candidate, options);
}

}  // namespace mugraph::verify
