// The general path's kernel (plan/paths/general_plan.h), in the interpreter's order: shared
// tile pointers and accumulators, loads of loop-invariant tiles, the for-loop (prefetching
// the next iteration's tiles with cp.async while computing this one's), the epilogue after
// the accumulators, then the output stores. The op bodies come from compute.cpp, mma.cpp,
// reductions.cpp and copies.cpp.
#include "codegen/emit/context.h"
#include "plan/shared_memory_allocator.h"

namespace mugraph::codegen {
namespace {

using graph::OpKind;
using graph::TensorId;
using plan::runsInLoop;

std::string sharedPointer(const EmitContext& context, TensorId tile, const std::string& stage) {
  const SharedTile& layout = context.general().shared[tile];
  std::string offset = std::to_string(layout.offset);
  if (!stage.empty()) offset += " + (" + stage + ") * " + std::to_string(layout.bytes);
  return "reinterpret_cast<" + storageType(layout.dtype) + "*>(mg_smem + " + offset + ")";
}

void declareSharedTiles(const EmitContext& context, bool doubleBuffered, const std::string& stage) {
  const plan::GeneralPlan& general = context.general();
  for (size_t t = 0; t < general.shared.size(); ++t) {
    const TensorId tile = static_cast<TensorId>(t);
    if (general.home[t] == TileHome::Shared && (general.shared[t].buffers > 1) == doubleBuffered) {
      context.out.line(storageType(general.shared[t].dtype) + "* const " + context.tileName(tile) +
                       " = " + sharedPointer(context, tile, stage) + ";");
    }
    if (!doubleBuffered && general.materialized[t]) {
      context.out.line("float* const " + context.materializedName(tile) +
                       " = reinterpret_cast<float*>(mg_smem + " +
                       std::to_string(general.materialized[t]->offset) + ");");
    }
    if (!doubleBuffered && general.rescaleFactors[t]) {
      context.out.line("float* const " + context.factorName(tile) +
                       " = reinterpret_cast<float*>(mg_smem + " +
                       std::to_string(general.rescaleFactors[t]->offset) + ");");
    }
  }
}

void initializeAccumulators(const EmitContext& context) {
  const plan::GeneralPlan& general = context.general();
  for (const graph::BlockOp& op : context.block().ops) {
    if (!graph::isAccumulator(op.kind)) continue;
    const TensorId acc = op.output;
    // The identities (a block of an empty part runs no iteration and stores them): the first
    // iteration overwrites a running max, and sums add to zero.
    const std::string identity =
        op.kind == OpKind::AccumMax ? "mg::negative_infinity()" : std::string("0.0f");
    if (general.home[acc] == TileHome::Registers) {
      const int fragments = general.ops[general.emitter[acc]].mma->fragments();
      context.out.line("float " + context.registersName(acc) + "[" + std::to_string(fragments) +
                       "];");
      context.out.line("#pragma unroll");
      context.out.line("for (int f = 0; f < " + std::to_string(fragments) + "; ++f) " +
                       context.registersName(acc) + "[f] = " + identity + ";");
    } else if (general.home[acc] == TileHome::Shared) {
      const SharedTile& layout = general.shared[acc];
      context.out.line("for (int e = threadIdx.x; e < " +
                       std::to_string(layout.rows * layout.cols) +
                       "; e += " + std::to_string(context.threads()) + ") " +
                       context.tileName(acc) + "[e] = " + identity + ";");
    }
  }
}

// Whether loop op `op` only multiplies input tiles that live through the whole loop into a
// register accumulator: it writes no shared memory, and no other op of the loop writes what
// it reads (such tiles share bytes with nothing the loop computes, and only copies fill
// them), so it needs no barrier before or after it within an iteration.
bool registerOnlyMatmul(const EmitContext& context, int op) {
  const plan::GeneralPlan& general = context.general();
  const plan::OpPlan& opPlan = general.ops[op];
  if (!opPlan.mma || !opPlan.accumulateInPlace || opPlan.mma->warpsK > 1 || !opPlan.chain.empty()) {
    return false;
  }
  const graph::BlockGraph& block = context.block();
  const TensorId product = block.ops[op].output;
  for (int accumulator : general.foldedAccumulators) {
    const graph::BlockOp& acc = block.ops[accumulator];
    if (acc.inputs[0] == product && acc.kind != OpKind::AccumSum) return false;
  }
  for (TensorId t : block.ops[op].inputs) {
    const int producer = general.emitter[t];
    if (producer < 0 || block.ops[producer].kind != OpKind::Input) return false;
    const plan::InputCopy& copy = *context.plan.inputs[producer];
    if (general.shared[t].buffers <= 1 && copy.perIteration) return false;
  }
  return true;
}

// Emits op `op`, then a barrier unless `barrier` is false (the caller places it).
void emitOp(const EmitContext& context, int op, bool barrier = true) {
  if (!context.general().ops[op].emitted) return;
  const graph::BlockOp& blockOp = context.block().ops[op];
  context.out.line("// " + std::string(graph::opName(blockOp.kind)) + " -> " +
                   context.block().tensors[blockOp.output].name);
  if (graph::isAccumulator(blockOp.kind)) {
    emitStandaloneAccumulate(context, op);
  } else if (context.general().ops[op].mma) {
    emitMmaOp(context, op);
  } else {
    emitComputeOp(context, op);
  }
  if (barrier) context.out.line("__syncthreads();");
}

// The for-loop. Tiles with several buffers form a cp.async pipeline of `stages` buffers:
// iterations 0 .. stages-2 are issued before the loop, iteration it + stages - 1 at the top
// of iteration it (one commit group per iteration, empty at the end), and wait_group
// stages-1 then guarantees that iteration it's group has landed.
void emitLoop(const EmitContext& context) {
  const KernelPlan& plan = context.plan;
  const plan::GeneralPlan& general = context.general();
  const graph::BlockGraph& block = context.block();
  CudaWriter& out = context.out;
  const int stages = plan.pipelineStages;
  const bool powerOfTwo = (stages & (stages - 1)) == 0;
  const std::string stageOf =
      powerOfTwo ? "& " + std::to_string(stages - 1) : "% " + std::to_string(stages);
  std::vector<int> prefetched;
  std::vector<int> loadedEachIteration;
  bool anyAsync = false;
  for (size_t o = 0; o < block.ops.size(); ++o) {
    if (!plan.inputs[o]) continue;
    const InputCopy& copy = *plan.inputs[o];
    const int op = static_cast<int>(o);
    if (general.shared[block.ops[o].output].buffers > 1) {
      prefetched.push_back(op);
    } else if (!copy.perIteration) {
      emitInputLoad(context, op, context.tileName(block.ops[o].output), "0");
    } else {
      loadedEachIteration.push_back(op);
    }
    anyAsync = anyAsync || copy.async;
  }
  if (!prefetched.empty()) {
    out.open("for (int stage = 0; stage < " + std::to_string(stages - 1) + "; ++stage)");
    for (int op : prefetched) {
      emitInputLoad(context, op, sharedPointer(context, block.ops[op].output, "stage"), "stage");
    }
    out.line("mg::cp_async_commit();");
    out.close();
  } else if (anyAsync) {
    out.line("mg::cp_async_commit();");
  }
  static const char* kBlock[graph::kGridAxes] = {"blockIdx.x", "blockIdx.y", "blockIdx.z"};
  const bool shortened =
      plan.shortenedLoop &&
      declareBlockIterations(context, plan.shortenedLoop->gridAxis == graph::kReplicated
                                          ? "0"
                                          : kBlock[plan.shortenedLoop->gridAxis]);
  if (block.forloop > 1 || shortened) {
    out.open("for (int it = 0; it < " + context.forloop() + "; ++it)");
    // Iterations past the block's last real one are empty (graph/tile_splits.h).
    if (shortened) out.line("if (it >= mg_iterations) break;");
  } else {
    out.open("");
    out.line("const int it = 0;");
    out.line("(void)it;");
  }
  declareSharedTiles(context, true, "it " + stageOf);
  declareRealExtents(context, true);
  if (!prefetched.empty()) {
    const std::string ahead = "it + " + std::to_string(stages - 1);
    out.open("if (" + ahead + " < " + context.forloop() + ")");
    for (int op : prefetched) {
      emitInputLoad(context, op,
                    sharedPointer(context, block.ops[op].output, "(" + ahead + ") " + stageOf),
                    ahead, true);
    }
    out.close();
    out.line("mg::cp_async_commit();");
    out.line("mg::cp_async_wait<" + std::to_string(stages - 1) + ">();");
  } else if (anyAsync) {
    out.line("mg::cp_async_wait<0>();");
  }
  for (int op : loadedEachIteration) {
    emitInputLoad(context, op, context.tileName(block.ops[op].output), "it", true);
  }
  out.line("__syncthreads();");
  // A barrier between two ops that touch shared memory (before the second, where the first
  // wrote or read it), none around a matmul that only reads loop-long input tiles into
  // registers, and one at the end (the next iteration's copies overwrite this one's stage).
  bool pending = false;
  for (size_t o = 0; o < block.ops.size(); ++o) {
    const int op = static_cast<int>(o);
    if (!runsInLoop(plan, op) || !general.ops[op].emitted) continue;
    if (registerOnlyMatmul(context, op)) {
      emitOp(context, op, false);
      continue;
    }
    if (pending) out.line("__syncthreads();");
    emitOp(context, op, false);
    pending = true;
  }
  out.line("__syncthreads();");
  out.close();
  if (shortened) {
    // Copies issued ahead for the skipped iterations land before shared memory is reused, and
    // a block that ran no iteration sees its accumulators' identities.
    if (anyAsync) out.line("mg::cp_async_wait<0>();");
    out.line("__syncthreads();");
  }
}

}  // namespace

void emitGeneralBody(const EmitContext& context) {
  const KernelPlan& plan = context.plan;
  const plan::GeneralPlan& general = context.general();
  const graph::BlockGraph& block = context.block();
  CudaWriter& out = context.out;
  out.line("extern __shared__ __align__(" + std::to_string(plan::kSharedTileAlignment) +
           ") unsigned char mg_smem[];");
  declareRealExtents(context, false);
  declareSharedTiles(context, false, "");
  initializeAccumulators(context);
  const std::string whole = wholeLoopCondition(context);
  if (whole.empty()) {
    emitLoop(context);
  } else {
    // Blocks whose every iteration reads whole tiles run the loop without the masks and the
    // zero-filling copies a length's partial last tile needs.
    EmitContext unmasked = context;
    unmasked.wholeLoopTiles = true;
    out.open("if (" + whole + ")");
    emitLoop(unmasked);
    out.close();
    out.open("else");
    emitLoop(context);
    out.close();
  }
  bool materialized = false;
  for (size_t t = 0; t < general.materialized.size(); ++t) {
    if (!general.materialized[t]) continue;
    emitMaterialize(context, static_cast<TensorId>(t));
    materialized = true;
  }
  if (materialized) out.line("__syncthreads();");
  for (size_t o = 0; o < block.ops.size(); ++o) {
    const graph::BlockOp& op = block.ops[o];
    if (op.kind == OpKind::Input || op.kind == OpKind::Output) continue;
    if (!runsInLoop(plan, static_cast<int>(o))) emitOp(context, static_cast<int>(o));
  }
  for (size_t o = 0; o < block.ops.size(); ++o) {
    const graph::BlockOp& op = block.ops[o];
    if (op.kind != OpKind::Output) continue;
    out.line("// output " + block.tensors[op.inputs[0]].name);
    if (general.home[op.inputs[0]] == TileHome::Registers) {
      emitRegisterOutputStore(context, static_cast<int>(o));
    } else {
      emitOutputStore(context, static_cast<int>(o));
    }
  }
}

}  // namespace mugraph::codegen
