// Kernels that take the lengths of dynamic dims as parameters (issue 28): the GEMM with
// dynamic rows cut by the grid in tiles of 128 and the attention with a dynamic key length cut
// by the loop in tiles of 64, and that attention split over 4 fixed key parts whose last parts
// are empty at short lengths (tests/dynamic_schedules.h; a part of whole tiles runs its loop
// unmasked, the one holding the length's end masked) become one kernel.cu whose kernels
// take `int dim_<name>`, whose manifest gives every shape, size and grid as a formula of the
// dims, and which compiles with NVRTC. The one source, built for the CPU emulation of CUDA,
// matches the interpreter of the schedule instantiated at lengths around each tile boundary,
// at 1 and at the range's max, on fresh normal random inputs. A causal prefill of dynamic
// length, as the search found it, takes the warpgroup attention path on sm_90 with tensor maps
// whose strides follow the length, and matches the interpreter on the general path.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "codegen/manifest.h"
#include "codegen_test_support.h"
#include "dynamic_schedules.h"
#include "emulated_kernels.h"
#include "graph/dynamic_extents.h"
#include "runtime/manifest_reader.h"

namespace mugraph::codegen::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The source without its first line (which names the schedule's hash, and so its range).
std::string withoutHeader(const std::string& source) {
  return source.substr(source.find('\n') + 1);
}

uint64_t freshSeed() {
  return std::random_device{}();
}

struct Fixture {
  graph::Schedule schedule;
  graph::Schedule otherRange;  // the same schedule over a range with another max
  std::string dim;
  std::vector<int64_t> lengths;
  std::string key;  // names its compiled code and scratch folder
};

std::vector<Fixture> fixtures() {
  using mugraph::testing::dynamicAttentionSchedule;
  using mugraph::testing::dynamicGemmSchedule;
  using mugraph::testing::dynamicSplitKvSchedule;
  return {{dynamicGemmSchedule(),
           dynamicGemmSchedule(3001),
           "m",
           {1, 63, 64, 65, 127, 128, 129, 1000, mugraph::testing::kDynamicGemmMax},
           "dynamic_m"},
          {dynamicAttentionSchedule(),
           dynamicAttentionSchedule(false, 1999),
           "s",
           {1, 63, 64, 65, 1000, mugraph::testing::kDynamicAttentionMax},
           "dynamic_s"},
          // Lengths with two and three parts empty, one part shortened, and many trips.
          {dynamicSplitKvSchedule(),
           dynamicSplitKvSchedule(false, 1999),
           "s",
           {1, 63, 65, 192, 193, 256, 257, 449, 1000, mugraph::testing::kDynamicAttentionMax},
           "dynamic_split"}};
}

TEST(DynamicKernels, TheSourceTakesTheLengthAndNamesNoLengthOfTheRange) {
  for (const Fixture& f : fixtures()) {
    SCOPED_TRACE(f.schedule.name);
    const std::string source = emitSchedule(f.schedule).source;
    EXPECT_THAT(source, HasSubstr("int dim_" + f.dim + ") {"));
    EXPECT_THAT(source, HasSubstr("mg::tile_extent(dim_" + f.dim));
    // No number derived from the range's max (the reference extents the schedule is planned
    // at): a range with another max prints the same kernels.
    EXPECT_EQ(withoutHeader(source), withoutHeader(emitSchedule(f.otherRange).source));
  }
}

TEST(DynamicKernels, TheLoopOverTheDynamicKeysRunsItsTripCountFromTheLength) {
  const std::string source = emitSchedule(mugraph::testing::dynamicAttentionSchedule()).source;
  EXPECT_THAT(source, HasSubstr("const int mg_forloop = (dim_s + 64 - 1) / 64;"));
  EXPECT_THAT(source, HasSubstr("for (int it = 0; it < mg_forloop; ++it)"));
  // K [2, 32, s] has rows of s elements: their stride is the length.
  EXPECT_THAT(source, HasSubstr("(32LL * dim_s)"));
}

// Split-KV with fixed parts: the grid keeps its 4 parts, a part holds the trips' tiles, and a
// part past the length runs no iteration.
TEST(DynamicKernels, ASplitOfFixedPartsTakesItsPartAndItsIterationsFromTheLength) {
  const std::string source = emitSchedule(mugraph::testing::dynamicSplitKvSchedule()).source;
  EXPECT_THAT(source, HasSubstr("const int mg_forloop = (dim_s + 256 - 1) / 256;"));
  EXPECT_THAT(source, HasSubstr("mg::part_iterations(dim_s, (mg_forloop * 64), 64, blockIdx.y, "
                                "mg_forloop)"));
  EXPECT_THAT(source, HasSubstr("if (it >= mg_iterations) break;"));
  // V [2, s, 32]: a part starts blockIdx.y · trips · 64 rows of 32 in.
  EXPECT_THAT(source, HasSubstr("static_cast<long long>(blockIdx.y) * 2048 * mg_forloop"));
  // A part whose last tile is whole (every part but the one holding the length's end) runs
  // the loop without masks or zero-filled copies; the other runs it with the real extents.
  const std::string whole =
      "if (mg::tile_extent(dim_s, (mg_forloop * 64), 64, blockIdx.y, (mg_forloop - 1)) == 64) {";
  const size_t unmasked = source.find(whole);
  ASSERT_NE(unmasked, std::string::npos);
  const size_t masked = source.find("else {", unmasked);
  ASSERT_NE(masked, std::string::npos);
  const std::string wholeLoop = source.substr(unmasked, masked - unmasked);
  EXPECT_THAT(wholeLoop, HasSubstr("mg::cp_async<16>("));
  EXPECT_THAT(wholeLoop, Not(HasSubstr("cp_async_zfill")));
  EXPECT_THAT(wholeLoop, Not(HasSubstr("real_t")));
  EXPECT_THAT(source.substr(masked), HasSubstr("cp_async_zfill"));
}

TEST(DynamicKernels, TheManifestGivesShapesSizesAndGridsAsFormulasOfTheDims) {
  const graph::Schedule schedule = mugraph::testing::dynamicGemmSchedule();
  const GeneratedCode& code = compiledOnce("dynamic_m", [&] { return schedule; }, {90});
  const nlohmann::json manifest = manifestJson(code);
  EXPECT_EQ(manifest.at("dims"), nlohmann::json::parse(R"([{"name":"m","min":1,"max":4096}])"));
  const nlohmann::json& tensors = manifest.at("tensors");
  EXPECT_EQ(tensors.at(0).at("shape"), nlohmann::json::parse(R"(["m", 128])"));
  EXPECT_EQ(tensors.at(0).at("bytes"), nlohmann::json::parse(R"([256, "m"])"));
  EXPECT_EQ(tensors.at(2).at("stored_shape"), nlohmann::json::parse(R"(["m", 64])"));
  const nlohmann::json& kernel = manifest.at("kernels").at(0);
  EXPECT_EQ(kernel.at("grid"), nlohmann::json::parse(R"([{"ceil_div": ["m", 128]}, 1, 1])"));
  EXPECT_EQ(kernel.at("params").back(),
            nlohmann::json::parse(R"({"kind": "dim", "dim": "m", "dtype": "i32"})"));
  // On sm_90 the GEMM takes the warpgroup path: A's tensor map is encoded at launch for m rows.
  const nlohmann::json& mapOfA = kernel.at("params").at(3);
  EXPECT_EQ(mapOfA.at("kind"), "tensor_map");
  EXPECT_EQ(mapOfA.at("tensor"), "A");
  EXPECT_EQ(mapOfA.at("dims"), nlohmann::json::parse(R"([128, ["m"]])"));
  // The formula gives the grid graph::instantiate computes, at every length, partial last
  // tiles and one row included.
  for (int64_t m : {1, 2, 127, 128, 129, 1000, 4095, 4096}) {
    const graph::DimValues at{{"m", m}};
    const graph::Schedule instantiated = graph::instantiate(schedule, at);
    EXPECT_EQ(graph::evaluateLaunchCountJson(kernel.at("grid").at(0), at, "grid"),
              instantiated.graph.ops.at(0).block->grid[0])
        << "m=" << m;
    EXPECT_EQ(graph::evaluateDimProductJson(tensors.at(0).at("bytes"), at, "bytes"), m * 256);
  }
}

TEST(DynamicKernels, TheRuntimeReadsADynamicManifestAtTheLengthsItIsGiven) {
  const graph::Schedule schedule = mugraph::testing::dynamicAttentionSchedule();
  const GeneratedCode& code = compiledOnce("dynamic_attention", [&] { return schedule; }, {90});
  const auto folder = scratchFolder("dynamic_manifest");
  writeGeneratedCode(code, folder.string());
  const std::string path = (folder / "manifest.json").string();
  const runtime::Manifest at65 = runtime::readManifest(path, {{"s", 65}});
  EXPECT_EQ(at65.tensor("K").shape, (graph::Dims{2, 32, 65}));
  EXPECT_EQ(at65.tensor("V").bytes, 2 * 65 * 32 * 2);
  EXPECT_EQ(at65.kernels.at(0).grid, (std::array<unsigned, 3>{2, 1, 1}));
  EXPECT_EQ(at65.kernels.at(0).dimArguments, (std::vector<int32_t>{65}));
  const auto fails = [&](const graph::DimValues& dims, const std::string& reason) {
    try {
      runtime::readManifest(path, dims);
      ADD_FAILURE() << "read at " << graph::dimValuesText(dims);
    } catch (const UserError& e) {
      EXPECT_THAT(e.what(), HasSubstr(reason));
    }
  };
  fails({}, "kernels take the length of 's'");
  fails({{"s", 2049}}, "s=2049 is outside [1, 2048]");
  fails({{"s", 5}, {"t", 3}}, "has no dim 't'");
  std::filesystem::remove_all(folder);
}

// The general path on sm_80 and the sm_90 plan (the warpgroup GEMM path for the GEMM).
TEST(DynamicKernels, EveryKernelCompilesWithNvrtcForEachTarget) {
  for (const Fixture& f : fixtures()) {
    for (int arch : {80, 90}) {
      SCOPED_TRACE(f.schedule.name + " sm_" + std::to_string(arch));
      const GeneratedCode& code =
          compiledOnce(f.key, [&] { return f.schedule; }, {arch});
      const std::string& ptx = code.ptx.at(archName(arch));
      // The length is a 32-bit parameter after the pointers (and tensor maps).
      EXPECT_THAT(ptx, HasSubstr(".param .u32 " + code.emitted.kernels[0].entry + "_param_"));
      for (const KernelResources& r : code.resources) EXPECT_EQ(r.spillStoreBytes, 0) << r.entry;
      // Each entry takes exactly the parameters the manifest lists (a static kernel of a dynamic
      // schedule, the split's combine, takes no length).
      const nlohmann::json manifest = manifestJson(code);
      for (const nlohmann::json& kernel : manifest.at("kernels")) {
        const std::string entry = kernel.at("entry").get<std::string>() + "_param_";
        const size_t count = kernel.at("params").size();
        EXPECT_THAT(ptx, HasSubstr(entry + std::to_string(count - 1))) << entry;
        EXPECT_THAT(ptx, ::testing::Not(HasSubstr(entry + std::to_string(count) + ","))) << entry;
        EXPECT_THAT(ptx, ::testing::Not(HasSubstr(entry + std::to_string(count) + "\n")))
            << entry;
      }
    }
  }
  const std::string gemm90 =
      compiledOnce("dynamic_m", [] { return mugraph::testing::dynamicGemmSchedule(); }, {90})
          .emitted.source;
  EXPECT_THAT(gemm90, HasSubstr("wgmma"));
  EXPECT_THAT(gemm90, HasSubstr("const int realRows = mg::tile_extent(dim_m, 128, 128, bx, 0);"));
}

// The source emitted for the CPU emulation (the general path) of `schedule` against the
// interpreter of the schedule instantiated at each of `lengths` of `dim`.
void expectEmulationMatchesTheInterpreter(const graph::Schedule& schedule, const std::string& dim,
                                          const std::vector<int64_t>& lengths,
                                          const std::string& key) {
  const EmittedSource emitted = emitForEmulation(schedule);
  const auto folder = scratchFolder(key);
  EmulatedKernels kernels(emitted.source, folder);
  for (int64_t n : lengths) {
    SCOPED_TRACE(dim + "=" + std::to_string(n));
    const graph::DimValues at{{dim, n}};
    const graph::Schedule instantiated = graph::instantiate(schedule, at);
    const uint64_t seed = freshSeed();
    SCOPED_TRACE("seed " + std::to_string(seed));
    const verify::TensorMap<double> inputs = verify::normalInputs(instantiated.program, seed, 1.0);
    const EmulatedRun run = kernels.run(instantiated.graph, emitted, inputs, schedule.graph.dims, at);
    const verify::TensorMap<double> expected =
        verify::evaluate<double>(instantiated.graph, run.inputs);
    for (const auto& [name, want] : expected) {
      const std::vector<double>& got = run.outputs.at(name).data;
      ASSERT_EQ(got.size(), want.data.size());
      double difference = 0;
      double magnitude = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_FALSE(std::isnan(got[i])) << name << " element " << i << " is unwritten";
        difference = std::max(difference, std::abs(got[i] - want.data[i]));
        magnitude = std::max(magnitude, std::abs(want.data[i]));
      }
      EXPECT_LE(difference, 2e-2 * magnitude) << name;
    }
  }
  std::filesystem::remove_all(folder);
}

TEST(DynamicKernels, OneSourceMatchesTheInterpreterAtEveryLength) {
  if (!kCanEmulate) GTEST_SKIP() << "the CUDA emulation needs x86-64";
  for (const Fixture& f : fixtures()) {
    SCOPED_TRACE(f.schedule.name);
    expectEmulationMatchesTheInterpreter(f.schedule, f.dim, f.lengths, f.key);
  }
}

// What the search found for a causal prefill of dynamic length (schedules/dynamic/
// prefill_causal_dynamic.*.json): on sm_90 one warpgroup flash kernel whose grid, trip count,
// causal bounds, key masks and tensor maps follow s. Q, K and V are [2, s, 64] in storage: a
// head's stride is 128 s bytes, so the maps' strides are products encoded at launch.
const std::vector<std::string>& causalPrefillSchedules() {
  static const std::vector<std::string> files{"prefill_causal_dynamic.flash_q64_kv64.json",
                                              "prefill_causal_dynamic.flash_q128_kv128.json"};
  return files;
}

graph::Schedule shippedDynamic(const std::string& file) {
  return graph::loadSchedule(std::string(MUGRAPH_SOURCE_DIR) + "/schedules/dynamic/" + file);
}

TEST(DynamicKernels, ACausalPrefillOfDynamicLengthRunsOnTheWarpgroupPathFromTheLength) {
  for (const std::string& file : causalPrefillSchedules()) {
    SCOPED_TRACE(file);
    const GeneratedCode& code = compiledOnce(file, [&] { return shippedDynamic(file); }, {90});
    const std::string& source = code.emitted.source;
    EXPECT_THAT(source, HasSubstr("mg::wgmma_"));
    EXPECT_THAT(source, HasSubstr("for (int it = 0; it < mg_forloop; ++it)"));
    // The causal bounds take the length: the last query row of the block and the key count.
    EXPECT_THAT(source, HasSubstr("mg::causal_iterations("));
    EXPECT_THAT(source, HasSubstr(", dim_s) - 1, 0, "));
    EXPECT_THAT(source, HasSubstr(", dim_s, dim_s, mg_forloop);"));
    ASSERT_EQ(code.resources.size(), 1u);
    EXPECT_FALSE(code.resources[0].wgmmaSerialized);
    EXPECT_EQ(code.resources[0].spillStoreBytes, 0);

    const nlohmann::json manifest = manifestJson(code);
    int maps = 0;
    for (const nlohmann::json& param : manifest.at("kernels").at(0).at("params")) {
      if (param.value("kind", "") != "tensor_map") continue;
      ++maps;
      EXPECT_EQ(param.at("dims"), nlohmann::json::parse(R"([64, ["s"], 2])"));
      EXPECT_EQ(param.at("strides_bytes"), nlohmann::json::parse(R"([128, [128, "s"]])"));
    }
    EXPECT_EQ(maps, 3);
    const auto folder = scratchFolder("causal_prefill_manifest");
    writeGeneratedCode(code, folder.string());
    const runtime::Manifest at100 = runtime::readManifest((folder / "manifest.json").string(),
                                                          {{"s", 100}});
    const runtime::ManifestTensorMap& q = at100.kernels.at(0).tensorMaps.at(0);
    EXPECT_EQ(q.dims[1], 100u);
    EXPECT_EQ(q.strideBytes[1], 12800u);
    std::filesystem::remove_all(folder);
  }
}

// A GEMM whose reference extents have more tiles than multiprocessors, as the search found it
// (schedules/dynamic/gemm_dynamic_m_wide.*): persistent at every length, launched one block per
// multiprocessor, its walk over ⌈m / 128⌉ x 32 tiles counted from the length.
TEST(DynamicKernels, APersistentGemmWalksAsManyTilesAsTheLengthGives) {
  const std::string file = "gemm_dynamic_m_wide.persistent.json";
  const GeneratedCode& code =
      compiledOnce(file, [&] { return shippedDynamic(file); }, {90});
  const std::string& source = code.emitted.source;
  EXPECT_THAT(source, HasSubstr("const int mg_gx = ((dim_m + 128 - 1) / 128), mg_gy = 32;"));
  EXPECT_THAT(source, HasSubstr("for (int tile = blockIdx.x; tile < mg_tiles; tile += gridDim.x)"));
  EXPECT_THAT(source, HasSubstr("mg::tile_extent(dim_m, 128, 128, bx, 0)"));
  const nlohmann::json manifest = manifestJson(code);
  const int multiprocessors = plan::targetByName("sm_90").streamingMultiprocessors;
  EXPECT_EQ(manifest.at("kernels").at(0).at("grid"),
            nlohmann::json::array({multiprocessors, 1, 1}));
  ASSERT_EQ(code.resources.size(), 1u);
  EXPECT_EQ(code.resources[0].spillStoreBytes, 0);
}

// The 64-row schedule on the general path (sm_80, and the CPU emulation; the 128-row one's
// tiles need more shared memory than an sm_80 block has there): the causal mask at a run-time
// length, at lengths around the tiles' boundaries, at 1 and at the range's max.
TEST(DynamicKernels, ACausalPrefillOfDynamicLengthMatchesTheInterpreterOnTheGeneralPath) {
  const std::string file = causalPrefillSchedules().at(0);
  const GeneratedCode& code = compiledOnce(file, [&] { return shippedDynamic(file); }, {80});
  // queries= absent: every row is its own query position, no remainder per element.
  EXPECT_THAT(code.emitted.source, HasSubstr("mg::causal_kept_rows("));
  EXPECT_THAT(code.emitted.source, ::testing::Not(HasSubstr("mg::wgmma_")));
  EXPECT_EQ(code.resources.at(0).spillStoreBytes, 0);
  if (!kCanEmulate) GTEST_SKIP() << "the CUDA emulation needs x86-64";
  expectEmulationMatchesTheInterpreter(shippedDynamic(file), "s",
                                       {1, 2, 63, 64, 65, 127, 128, 129, 300, 1024},
                                       "causal_prefill");
}

}  // namespace
}  // namespace mugraph::codegen::testing
