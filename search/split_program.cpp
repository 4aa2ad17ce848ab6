#include "search/split_program.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "graph/error.h"
#include "graph/value_ranges.h"
#include "plan/paths/warpgroup_mma_plan.h"
#include "search/sketches.h"

namespace mugraph::search {
namespace {

// producer[t]: the op computing tensor t, or -1 for program inputs.
std::vector<int> producers(const graph::Program& program) {
  std::vector<int> producer(program.tensors.size(), -1);
  for (size_t i = 0; i < program.ops.size(); ++i) {
    for (graph::TensorId t : program.ops[i].outputs) producer[t] = static_cast<int>(i);
  }
  return producer;
}

// Whether op `op` continues the epilogue of the matmul `matmul` (sketches.h:
// lastGemmEpilogueOp): element-wise, reading the matmul's result or that of an op of its
// epilogue, every op between them in the epilogue too.
bool readsEpilogue(const graph::Program& program, int op, int matmul) {
  std::set<graph::TensorId> chain(program.ops[matmul].outputs.begin(),
                                  program.ops[matmul].outputs.end());
  for (int i = matmul + 1; i <= op; ++i) {
    const graph::KernelOp& o = program.ops[i];
    const bool reads = std::any_of(o.inputs.begin(), o.inputs.end(),
                                   [&](graph::TensorId t) { return chain.count(t) > 0; });
    if (!plan::isGemmEpilogueOp(o.kind) || !reads || i - matmul > kMostEpilogueOps) return false;
    chain.insert(o.outputs.begin(), o.outputs.end());
  }
  return true;
}

// How bad a cut before op `cut` is: the tensors computed before it and read at or after it,
// worse, with `keepRuns`, a cut between two ops that are not matmuls (a run one block graph
// could fuse: a residual add and the norm after it), and far worse, any tensor the cut must
// not cross (`avoid`).
int cutCost(const graph::Program& program, const std::vector<int>& producer,
            const std::vector<bool>& avoid, int cut, bool keepRuns) {
  constexpr int kAvoided = 1000;
  constexpr int kSplitRun = 100;
  std::set<graph::TensorId> crossed;
  for (size_t i = static_cast<size_t>(cut); i < program.ops.size(); ++i) {
    for (graph::TensorId t : program.ops[i].inputs) {
      if (producer[t] >= 0 && producer[t] < cut) crossed.insert(t);
    }
  }
  int cost = 0;
  for (graph::TensorId t : crossed) cost += avoid[t] ? kAvoided : 1;
  const auto isMatmul = [&](int op) { return program.ops[op].kind == graph::OpKind::Matmul; };
  // A matmul and its epilogue are one kernel too.
  const bool epilogue = cut > 0 && isMatmul(cut - 1) && readsEpilogue(program, cut, cut - 1);
  if (keepRuns && cut > 0 && !isMatmul(cut) && (!isMatmul(cut - 1) || epilogue)) {
    cost += kSplitRun;
  }
  return cost;
}

graph::Program pieceProgram(const graph::Program& program, const std::vector<int>& producer,
                            int first, int end, int index) {
  graph::Program piece;
  piece.name = program.name + ".piece" + std::to_string(index);
  piece.dims = program.dims;  // its tensors name them by index
  std::map<graph::TensorId, graph::TensorId> local;
  const auto add = [&](graph::TensorId t) {
    const auto [it, added] = local.emplace(t, static_cast<graph::TensorId>(piece.tensors.size()));
    if (added) piece.tensors.push_back(program.tensors[t]);
    return it->second;
  };
  for (int i = first; i < end; ++i) {
    for (graph::TensorId t : program.ops[i].inputs) {
      if ((producer[t] < first) && !local.count(t)) piece.inputs.push_back(add(t));
    }
    graph::KernelOp op = program.ops[i];
    for (graph::TensorId& t : op.inputs) t = local.at(t);
    for (graph::TensorId& t : op.outputs) t = add(t);
    piece.ops.push_back(std::move(op));
  }
  // Outputs: what the whole program returns or a later op reads, in the order computed.
  std::set<graph::TensorId> readLater(program.outputs.begin(), program.outputs.end());
  for (size_t i = static_cast<size_t>(end); i < program.ops.size(); ++i) {
    readLater.insert(program.ops[i].inputs.begin(), program.ops[i].inputs.end());
  }
  for (int i = first; i < end; ++i) {
    for (graph::TensorId t : program.ops[i].outputs) {
      if (readLater.count(t)) piece.outputs.push_back(local.at(t));
    }
  }
  return piece;
}

}  // namespace

int maxOpsOneSearch(const SearchConfig& config) {
  const int blockGraphs = std::min(config.maxBlockGraphKernels, config.maxKernels);
  return blockGraphs * config.maxBlockOps + (config.maxKernels - blockGraphs);
}

int maxOpsPerPiece(const SearchConfig& config, int programOps) {
  const int limit = std::max(1, config.maxBlockOps);
  return programOps > limit ? limit : std::max(1, programOps / 2);
}

MatmulsAlone kernelsWithMatmulsAlone(const graph::Program& program, int first, int end,
                                     int fusedOps) {
  MatmulsAlone result;
  int run = 0;      // ops in the current run of other ops
  int matmul = -1;  // the matmul whose epilogue may go on, -1 where none
  for (int i = first; i < end; ++i) {
    if (program.ops[i].kind == graph::OpKind::Matmul) {
      ++result.kernels;
      run = 0;
      matmul = i;
      continue;
    }
    if (matmul >= 0 && readsEpilogue(program, i, matmul)) {
      if (i == matmul + 1) ++result.fusedRuns;  // the matmul's kernel, now a block graph
      continue;
    }
    matmul = -1;
    if (run == 0 || run == fusedOps) {
      ++result.kernels;
      run = 1;
    } else if (++run == 2) {
      ++result.fusedRuns;
    }
  }
  return result;
}

namespace {

bool withinLimits(const MatmulsAlone& needed, const PieceLimits& limits) {
  return limits.kernels <= 0 ||
         (needed.kernels <= limits.kernels && needed.fusedRuns <= limits.blockGraphs);
}

}  // namespace

bool roomForMatmulsAlone(const graph::Program& program, const SearchConfig& config) {
  const PieceLimits limits = pieceLimits(config, static_cast<int>(program.ops.size()));
  return withinLimits(
      kernelsWithMatmulsAlone(program, 0, static_cast<int>(program.ops.size()), limits.fusedOps),
      limits);
}

PieceLimits pieceLimits(const SearchConfig& config, int programOps) {
  // The kernel limits bound a piece's search; its ops only need to be fewer than the
  // program's, so splitting again ends at single ops.
  return PieceLimits{std::max(1, std::min(maxOpsOneSearch(config), programOps - 1)),
                     config.maxKernels, config.maxBlockGraphKernels,
                     std::max(1, config.maxBlockOps)};
}

std::vector<ProgramPiece> splitProgram(const graph::Program& program, int maxOps) {
  return splitProgram(program, PieceLimits{maxOps, 0, 1});
}

std::vector<ProgramPiece> splitProgram(const graph::Program& program, const PieceLimits& limits) {
  if (limits.ops < 1) throw UserError("split", "a piece needs room for at least one op");
  const std::vector<int> producer = producers(program);
  // Tensors no cut should cross (graph/value_ranges.h). A nonnegative one becomes an input of
  // the next piece, drawn with either sign by the verifier's tests, so the sqrt or division it
  // fed would be tested where the program never goes (NaN in both): every candidate is
  // refuted. One of squared range would be stored between the pieces in the program's 16 bits.
  std::vector<bool> avoid = graph::nonnegativeTensors(program);
  const std::vector<bool> squared = graph::squaredRangeTensors(program);
  for (size_t t = 0; t < avoid.size(); ++t) {
    avoid[t] = avoid[t] || (squared[t] && program.tensors[t].dtype != graph::DType::F32);
  }
  const int n = static_cast<int>(program.ops.size());
  const auto fits = [&](int first, int end) {
    return end - first <= limits.ops &&
           withinLimits(kernelsWithMatmulsAlone(program, first, end, limits.fusedOps), limits);
  };
  std::vector<ProgramPiece> pieces;
  for (int first = 0; first < n;) {
    int end = n;
    if (!fits(first, n)) {
      // The cheapest cut that fits; among equals the latest (fewer pieces).
      int best = -1;
      end = first + 1;
      for (int cut = first + 1; cut < n && fits(first, cut); ++cut) {
        const int c = cutCost(program, producer, avoid, cut, limits.kernels > 0);
        if (best < 0 || c <= best) {
          best = c;
          end = cut;
        }
      }
    }
    ProgramPiece piece;
    piece.firstOp = first;
    piece.endOp = end;
    piece.program = pieceProgram(program, producer, first, end, static_cast<int>(pieces.size()));
    pieces.push_back(std::move(piece));
    first = end;
  }
  return pieces;
}

}  // namespace mugraph::search
