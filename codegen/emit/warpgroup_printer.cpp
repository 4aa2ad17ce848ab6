// The ring, barriers, box loads and descriptors of the warpgroup emitters (see
// warpgroup_printer.h).
#include "codegen/emit/warpgroup_printer.h"

#include "graph/cuda_limits.h"

namespace mugraph::codegen {

void WarpgroupPrinter::declareRing(const std::vector<std::string>& extraBarriers) const {
  const plan::WarpgroupLimits& limits = ring_.limits;
  const std::string alignment = str(limits.swizzleAlignment);
  out_.line("extern __shared__ __align__(" + alignment + ") unsigned char mg_smem_raw[];");
  out_.line("// The " + str(limits.swizzleRowBytes) + "-byte swizzle repeats every " + alignment +
            " bytes: stages start on that boundary.");
  out_.line("unsigned char* const mg_smem = reinterpret_cast<unsigned char*>(");
  out_.line("    (reinterpret_cast<unsigned long long>(mg_smem_raw) + " +
            str(limits.swizzleAlignment - 1) + "ull) & ~" + str(limits.swizzleAlignment - 1) +
            "ull);");
  const std::string cluster = ring_.clusterBlocks == 1 ? "" : ", " + str(ring_.clusterBlocks);
  out_.line("const mg::Ring<" + str(ring_.stages) + cluster +
            "> ring{reinterpret_cast<unsigned long long*>(mg_smem + " + str(ring_.barrierOffset) +
            ")};");
  if (ring_.clusterBlocks > 1) out_.line("const int mg_rank = mg::cluster_rank();");
  for (size_t b = 0; b < extraBarriers.size(); ++b) {
    out_.line("unsigned long long* const " + extraBarriers[b] + " = ring.full + " +
              str(2 * ring_.stages + static_cast<int64_t>(b)) + ";");
  }
  out_.line("const int warpgroup = threadIdx.x / " + str(limits.threads) + ";");
}

void WarpgroupPrinter::initializeRing(const std::vector<std::string>& extraBarriers) const {
  out_.open("if (threadIdx.x == 0)");
  for (size_t m = 0; m < ring_.maps.size(); ++m) {
    out_.line("mg::prefetch_tensor_map(&" + mapName(static_cast<int>(m)) + ");");
  }
  const std::string fill = ring_.fillArrivals == 1 ? "" : ", " + str(ring_.fillArrivals);
  out_.line("ring.init(" + str(ring_.consumers * ring_.warpsPerWarpgroup()) + fill + ");");
  for (const std::string& barrier : extraBarriers) {
    out_.line("mg::mbarrier_init(" + barrier + ", 1);");
  }
  out_.line("mg::fence_mbarrier_init();");
  out_.close();
  if (ring_.clusterBlocks > 1) {
    out_.line("// Every block of the cluster has its barriers before any copy multicasts to it.");
    out_.line("mg::cluster_sync();");
  } else {
    out_.line("__syncthreads();");
  }
}

void WarpgroupPrinter::setmaxnreg(bool producer) const {
  if (producer) {
    out_.line("mg::setmaxnreg_dec<" + str(ring_.producerRegisters) + ">();");
  } else {
    out_.line("mg::setmaxnreg_inc<" + str(ring_.consumerRegisters) + ">();");
  }
}

void WarpgroupPrinter::declareConsumerThread(const std::string& consumerIndex) const {
  out_.line("const int consumer = " + consumerIndex + ";");
  out_.line("const int lane = threadIdx.x & " + str(graph::kWarpSize - 1) + ";");
  out_.line("const int warp = (threadIdx.x / " + str(graph::kWarpSize) + ") & " +
            str(ring_.warpsPerWarpgroup() - 1) + ";  // within the warpgroup");
}

std::string WarpgroupPrinter::fullBarrier(const std::string& stage) const {
  return "&ring.full[" + stage + "]";
}

std::string WarpgroupPrinter::stageBase(const std::string& stage) const {
  const std::string offset = ring_.stagesOffset == 0 ? "" : str(ring_.stagesOffset) + " + ";
  return "mg_smem + " + offset + stage + " * " + str(ring_.stageBytes);
}

void WarpgroupPrinter::acquireStage(const std::string& counter, const std::string& stage) const {
  out_.line("const int " + stage + " = ring.acquire(" + counter + ");");
}

void WarpgroupPrinter::waitStage(const std::string& counter) const {
  out_.line("const int s = ring.wait(" + counter + ");");
}

void WarpgroupPrinter::releaseStage(const std::string& counter,
                                    const std::string& condition) const {
  out_.line((condition.empty() ? "" : "if (" + condition + ") ") + "ring.release(" + counter +
            ", lane);");
}

void WarpgroupPrinter::expectBytes(const std::string& barrier, int64_t bytes) const {
  out_.line("mg::mbarrier_arrive_expect_tx(" + barrier + ", " + str(bytes) + ");");
}

std::string WarpgroupPrinter::coordinate(const plan::BulkOperand& op, int i,
                                         const std::string& iteration, int box) const {
  std::string text;
  for (int axis = 0; axis < graph::kGridAxes; ++axis) {
    if (op.blockStep[i][axis] == 0) continue;
    text += (text.empty() ? "" : " + ") + std::string(kWarpgroupTile[axis]) + " * " +
            str(op.blockStep[i][axis]);
  }
  if (op.iterationStep[i] != 0) {
    text += (text.empty() ? "" : " + ") + iteration + " * " + str(op.iterationStep[i]);
  }
  const int64_t boxElements = op.view.box[0];
  if (i == 0 && box > 0) text += (text.empty() ? "" : " + ") + str(boxElements * box);
  return text.empty() ? "0" : text;
}

void WarpgroupPrinter::loadBoxes(const plan::BulkOperand& op, const std::string& prefix,
                                 int64_t firstOffset, const std::string& barrier,
                                 const std::string& iteration) const {
  const plan::TensorMapDesc& map = ring_.maps[op.map];
  // A multicast operand: this block's slice of each box's rows, to every block of the cluster.
  const int64_t sliceRows = op.rows / op.multicast;
  const std::string slice =
      op.multicast == 1 ? "" : " + mg_rank * " + str(sliceRows * ring_.limits.swizzleRowBytes);
  const std::string kind = op.multicast == 1 ? "d(" : "d_multicast(";
  for (int j = 0; j < op.boxes; ++j) {
    std::string call = "mg::bulk_tensor_load_" + std::to_string(map.rank) + kind + prefix +
                       str(firstOffset + j * op.boxBytes) + slice + ", &" + mapName(op.map) + ", " +
                       barrier;
    if (op.multicast > 1) call += ", " + str((1 << op.multicast) - 1);
    for (int i = 0; i < map.rank; ++i) {
      call += ", " + coordinate(op, i, iteration, j);
      if (op.multicast > 1 && i == op.rowDim) call += " + mg_rank * " + str(sliceRows);
    }
    out_.line(call + ");");
  }
}

void WarpgroupPrinter::gatherBoxes(const plan::BulkOperand& op, const std::string& stage,
                                   const std::string& iteration, const std::string& pointer) const {
  const plan::TensorMapDesc& view = op.view;
  const plan::WarpgroupLimits& limits = ring_.limits;
  const int64_t chunk = op.gatherChunkBytes;
  const int64_t rowBytes = limits.swizzleRowBytes;
  const int64_t chunksPerRow = rowBytes / chunk;
  const int64_t rowStep = limits.threads / chunksPerRow;  // rows the warpgroup covers at once
  const int64_t steps = op.boxes * op.rows / rowStep;
  const int64_t swizzleChunk = 16;  // bytes XOR-permuted together by the 128-byte swizzle
  const int64_t swizzleRows = rowBytes / swizzleChunk;
  const int rowDim = op.rowDim;
  const std::string wide = "static_cast<long long>";
  std::string fixed;  // the other dims' offset in bytes
  for (int i = 1; i < view.rank; ++i) {
    if (i == rowDim) continue;
    const std::string c = coordinate(op, i, iteration, 0);
    if (c != "0") fixed += " + " + wide + "(" + c + ") * " + str(view.strideBytes[i]);
  }
  out_.open("");
  out_.line("// Gathered in " + str(chunk) + "-byte chunks: its rows are not 16-byte aligned.");
  out_.line("const int mg_chunk = threadIdx.x % " + str(chunksPerRow) + ";");
  out_.line("const int mg_row = threadIdx.x / " + str(chunksPerRow) + ";");
  // Coordinates in int (a tensor dim is below 2^31), addresses in 64 bits once per stage;
  // each chunk then adds a constant, and a chunk past the end reads nothing (its source size
  // is 0), so its address is never dereferenced.
  out_.line("const int mg_c0 = " + coordinate(op, 0, iteration, 0) + " + mg_chunk * " +
            str(chunk / elementBytes()) + ";");
  out_.line("const int mg_c1 = " + coordinate(op, rowDim, iteration, 0) + " + mg_row;");
  out_.line("const unsigned char* const mg_src = reinterpret_cast<const unsigned char*>(" +
            pointer + ")" + fixed + " + " + wide + "(mg_c1) * " + str(view.strideBytes[rowDim]) +
            " + " + wide + "(mg_c0) * " + str(elementBytes()) + ";");
  out_.line("unsigned char* const mg_dst = " + stage + " + " + str(op.offset) + " + mg_row * " +
            str(rowBytes) + " + mg_chunk * " + str(chunk) + " % " + str(swizzleChunk) + ";");
  out_.line("const int mg_swizzled = mg_chunk * " + str(chunk) + " / " + str(swizzleChunk) + ";");
  out_.line("#pragma unroll");
  out_.open("for (int i = 0; i < " + str(steps) + "; ++i)");
  out_.line("const int box = i * " + str(rowStep) + " / " + str(op.rows) + ";");
  out_.line("const int r = i * " + str(rowStep) + " % " + str(op.rows) + ";");
  out_.line("const bool real = mg_c0 + box * " + str(view.box[0]) + " < " + str(view.dims[0]) +
            " && mg_c1 + r < " + str(view.dims[rowDim]) + ";");
  out_.line("mg::cp_async_zfill<" + str(chunk) + ">(mg_dst + box * " + str(op.boxBytes) +
            " + r * " + str(rowBytes) + " + ((mg_swizzled ^ ((mg_row + r) % " + str(swizzleRows) +
            ")) * " + str(swizzleChunk) + "),");
  out_.line("    mg_src + r * " + str(view.strideBytes[rowDim]) + " + box * " +
            str(view.box[0] * elementBytes()) + ", real ? " + str(chunk) + " : 0);");
  out_.close();
  out_.close();
}

// K-major boxes hold a row's worth of K per row, so step kk is kk's bytes into the row of box
// kk / (steps per box); MN-major boxes hold 16 rows of K per 16 swizzled rows and a row's
// worth of M or N per box.
std::string WarpgroupPrinter::descriptor(const plan::BulkOperand& op, const std::string& base,
                                         int64_t rows0, int kk) const {
  const plan::WarpgroupLimits& limits = ring_.limits;
  const int64_t rowBytes = limits.swizzleRowBytes;
  const int64_t boxElements = limits.boxElements(elementBytes());
  int64_t offset;
  int64_t leading;
  if (op.kMajor) {
    const int64_t stepsPerBox = boxElements / limits.wgmmaK;
    offset = (kk / stepsPerBox) * op.boxBytes +
             (kk % stepsPerBox) * limits.wgmmaK * elementBytes() + rows0 * rowBytes;
    leading = 16;  // unused by swizzled K-major layouts ("assumed 1")
  } else {
    offset = (rows0 / boxElements) * op.boxBytes + kk * limits.wgmmaK * rowBytes;
    leading = op.boxBytes;  // the next box of M or N
  }
  // The operand's descriptor at `base`, alike for every k step and tile (computed once),
  // advanced to this one's bytes.
  const std::string atBase = "mg::wgmma_descriptor_128b(" + base + ", " + str(leading) + ", " +
                             str(limits.swizzleAlignment) + ")";
  return offset == 0 ? atBase : "mg::wgmma_descriptor_advance(" + atBase + ", " + str(offset) + ")";
}

std::string WarpgroupPrinter::wgmmaShape(int64_t n) const {
  return "m" + str(ring_.limits.wgmmaRows) + "n" + str(n) + "k" + str(ring_.limits.wgmmaK);
}

}  // namespace mugraph::codegen
