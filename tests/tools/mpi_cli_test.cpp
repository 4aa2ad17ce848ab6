// `mpirun -np N mugraph superoptimize` on localhost: one, two and three ranks give the variants,
// the ranking and the files of a run without MPI, and a run whose rank 1 is killed part way
// fails, then resumes from its checkpoint to that same result; a dataset too. Skipped where the
// build has no MPI or mpirun is missing.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include "tools/run_cli.h"

namespace mugraph::testing {
namespace {

namespace fs = std::filesystem;

// The search of the resume tests in search/, small enough for a 2-core CI machine.
constexpr const char* kSmallGqa =
    "program gqa_small\n"
    "input Q f16 [2, 32, 16]\n"
    "input K f16 [2, 16, 256]\n"
    "input V f16 [2, 256, 16]\n"
    "A = matmul(Q, K)\n"
    "E = exp(A)\n"
    "S = reduce_sum(E, dim=2)\n"
    "O = matmul(div(E, S), V)\n"
    "output O\n";

// What two runs must agree on: every file written but the summary, byte for byte, and the
// summary without its times, its record of the ranks and rank 0's oracle counters.
struct Outputs {
  std::map<std::string, std::string> files;  // relative path -> contents
  nlohmann::json summary;
};

Outputs readOutputs(const fs::path& dir) {
  Outputs outputs;
  for (const fs::directory_entry& entry : fs::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    const std::string relative = fs::relative(entry.path(), dir).string();
    if (relative == "summary.json") continue;
    outputs.files[relative] = readWholeFile(entry.path().string());
  }
  outputs.summary = nlohmann::json::parse(readWholeFile((dir / "summary.json").string()));
  for (const char* varies : {"seconds", "ranks", "oracle", "work"}) outputs.summary.erase(varies);
  return outputs;
}

// Every file under `dir`, byte for byte, but each summary.json (a model's, and each subgraph's)
// without what depends on the ranks and the clock.
std::map<std::string, std::string> filesWithoutTimes(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const fs::directory_entry& entry : fs::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    const std::string relative = fs::relative(entry.path(), dir).string();
    std::string contents = readWholeFile(entry.path().string());
    if (entry.path().filename() == "summary.json") {
      nlohmann::json summary = nlohmann::json::parse(contents);
      for (const char* varies : {"seconds", "ranks", "oracle", "work", "spread"}) {
        summary.erase(varies);
      }
      if (summary.contains("subgraphs")) {
        nlohmann::json subgraphs = nlohmann::json::array();
        for (nlohmann::json subgraph : summary.at("subgraphs")) {
          subgraph.erase("seconds");
          subgraph.erase("rank");
          subgraphs.push_back(subgraph);
        }
        summary["subgraphs"] = subgraphs;
      }
      contents = summary.dump();
    }
    files[relative] = contents;
  }
  return files;
}

class MpiCli : public ::testing::Test {
 protected:
  void SetUp() override {
#ifndef MUGRAPH_MPIEXEC
    GTEST_SKIP() << "built without MPI";
#else
    // Where mpirun lies elsewhere (a GPU machine running binaries carried from here).
    const char* moved = std::getenv("MUGRAPH_MPIEXEC");
    mpiexec_ = moved ? moved : MUGRAPH_MPIEXEC;
    if (!fs::exists(mpiexec_)) GTEST_SKIP() << mpiexec_ << " is missing";
#endif
    scratch_ = fs::temp_directory_path() / ("mugraph_mpi_test_" + std::to_string(::getpid()));
    fs::create_directories(scratch_);
    program_ = (scratch_ / "gqa_small.mg").string();
    std::ofstream(program_) << kSmallGqa;
  }
  void TearDown() override {
    if (!scratch_.empty()) fs::remove_all(scratch_);
  }
  // Localhost ranks on a machine with fewer cores, as root in CI containers.
  std::string mpirun(int ranks, const std::string& launch = "") const {
    return mpiexec_ + " -np " + std::to_string(ranks) +
           " --oversubscribe --allow-run-as-root --bind-to none " + launch;
  }
  // mpirun's launch prefix under which rank 1 kills itself once the shell test `condition`
  // holds: the run is then part way.
  static std::string killRankOneOnce(const std::string& condition) {
    return "sh -c 'if [ \"$OMPI_COMM_WORLD_RANK\" = 1 ]; then (until " + condition +
           "; do sleep 0.05; done; kill -9 $$) & fi; exec \"$0\" \"$@\"'";
  }
  // The environment of a run whose rank is killed: its scratch folders (TMPDIR), which the killed
  // rank cannot remove, go under the test's own.
  std::string killedRanksScratch() const {
    return "TMPDIR=" + scratch_.string();
  }
  // Runs `command(out)` as one process, then under 1, 2 and 3 ranks, expecting every file of
  // the one process from each; `check` looks at each MPI run too. Returns the files.
  std::map<std::string, std::string> expectTheFilesOfOneProcessOverRanks(
      const std::function<std::string(const std::string& out)>& command,
      const std::function<void(int ranks, const CliResult& r, const fs::path& out)>& check) {
    const CliResult alone = runMugraph(command("alone"), scratch_.string());
    EXPECT_EQ(alone.exitCode, 0) << alone.err;
    const std::map<std::string, std::string> expected = filesWithoutTimes(scratch_ / "alone");
    for (int ranks : {1, 2, 3}) {
      const std::string out = "ranks" + std::to_string(ranks);
      const CliResult r = runMugraph(command(out), scratch_.string(), "", mpirun(ranks));
      EXPECT_EQ(r.exitCode, 0) << ranks << " ranks: " << r.err;
      EXPECT_EQ(filesWithoutTimes(scratch_ / out), expected) << ranks << " ranks";
      check(ranks, r, scratch_ / out);
    }
    return expected;
  }
  std::string modelSearch(const std::string& out) const {
    return "superoptimize '" + std::string(MUGRAPH_SOURCE_DIR) +
           "/tests/onnx_import/models/decoder_block.onnx' --threads 1 --max-kernels 2 "
           "--max-variants 2 --out " +
           (scratch_ / out).string();
  }
  std::string search(const std::string& out) const {
    return "superoptimize " + program_ + " --threads 1 --max-kernels 3 --max-variants 6 --out " +
           (scratch_ / out).string();
  }

  std::string mpiexec_;
  fs::path scratch_;
  std::string program_;
};

TEST_F(MpiCli, OneTwoAndThreeRanksWriteWhatOneProcessWrites) {
  const CliResult alone = runMugraph(search("alone"), scratch_.string());
  ASSERT_EQ(alone.exitCode, 0) << alone.err;
  const Outputs expected = readOutputs(scratch_ / "alone");
  ASSERT_FALSE(expected.summary.at("variants").empty());
  for (int ranks : {1, 2, 3}) {
    const std::string out = "ranks" + std::to_string(ranks);
    const CliResult r = runMugraph(search(out), scratch_.string(), "", mpirun(ranks));
    ASSERT_EQ(r.exitCode, 0) << ranks << " ranks: " << r.err;
    const Outputs got = readOutputs(scratch_ / out);
    EXPECT_EQ(got.summary, expected.summary) << ranks << " ranks";
    EXPECT_EQ(got.files, expected.files) << ranks << " ranks";
    // Every rank is recorded, and the table is printed once (by rank 0).
    const nlohmann::json summary =
        nlohmann::json::parse(readWholeFile((scratch_ / out / "summary.json").string()));
    EXPECT_EQ(summary.at("ranks").size(), static_cast<size_t>(ranks));
    EXPECT_EQ(r.out.find("rank  name"), r.out.rfind("rank  name")) << r.out;
  }
}

// A GPU test (skips without one): --profile over two ranks times each verified variant once,
// on the ranks with a GPU of their own (rank 1 has none on a one-GPU machine), and rank 0
// writes every variant's code, the ones timed elsewhere included.
TEST_F(MpiCli, ProfileOverTwoRanksTimesEveryVariantOnce) {
  const std::string out = (scratch_ / "profiled").string();
  const CliResult r =
      runMugraph(search("profiled") + " --profile", scratch_.string(), "", mpirun(2));
  if (r.exitCode != 0 && r.err.find("needs a GPU") != std::string::npos) {
    GTEST_SKIP() << "no GPU: " << r.err;
  }
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const nlohmann::json summary =
      nlohmann::json::parse(readWholeFile((scratch_ / "profiled" / "summary.json").string()));
  EXPECT_EQ(summary.at("ranked_by"), "measured_gpu_time");
  ASSERT_EQ(summary.at("ranks").size(), 2u);
  const int onRank0 = summary.at("ranks").at(0).at("profiled").get<int>();
  const int onRank1 = summary.at("ranks").at(1).at("profiled").get<int>();
  const size_t dropped =
      summary.contains("dropped_on_gpu") ? summary.at("dropped_on_gpu").size() : 0;
  EXPECT_GT(onRank0, 0);
  EXPECT_EQ(static_cast<size_t>(onRank0 + onRank1), summary.at("variants").size() + dropped);
  RecordProperty("profiled_on_rank_1", onRank1);
  for (const nlohmann::json& v : summary.at("variants")) {
    const std::string name = v.at("name").get<std::string>();
    EXPECT_TRUE(v.contains("measured_us")) << name;
    for (const char* file : {"kernel.cu", "sm_90.ptx", "manifest.json", "schedule.json"}) {
      EXPECT_TRUE(fs::exists(scratch_ / "profiled" / name / file)) << name << "/" << file;
    }
  }
  std::cerr << "profiled: rank 0 " << onRank0 << ", rank 1 " << onRank1 << "\n";
}

TEST_F(MpiCli, KilledRankFailsTheRunAndResumeEndsWithTheSameResult) {
  const CliResult alone = runMugraph(search("alone"), scratch_.string());
  ASSERT_EQ(alone.exitCode, 0) << alone.err;
  const std::string checkpoint = (scratch_ / "search.ckpt").string();
  // Rank 1 kills itself once rank 0 has written a checkpoint: the search is then part way.
  const std::string killRankOne = killRankOneOnce("[ -s " + checkpoint + " ]");
  const std::string withCheckpoint = " --checkpoint " + checkpoint + " --checkpoint-interval 0.2";
  const CliResult killed =
      runMugraph(search("killed") + withCheckpoint, scratch_.string(), "", mpirun(2, killRankOne));
  ASSERT_NE(killed.exitCode, 0) << killed.err;
  EXPECT_NE(killed.err.find("--resume"), std::string::npos) << killed.err;
  const nlohmann::json saved = nlohmann::json::parse(readWholeFile(checkpoint));
  EXPECT_LT(saved.at("completed").size(), saved.at("subtrees").get<size_t>())
      << "the kill came after the search";

  const CliResult resumed = runMugraph(search("resumed") + withCheckpoint + " --resume",
                                       scratch_.string(), "", mpirun(2));
  ASSERT_EQ(resumed.exitCode, 0) << resumed.err;
  const Outputs expected = readOutputs(scratch_ / "alone");
  const Outputs got = readOutputs(scratch_ / "resumed");
  EXPECT_EQ(got.files, expected.files);
  EXPECT_EQ(got.summary.at("variants"), expected.summary.at("variants"));
  EXPECT_EQ(got.summary.at("candidates"), expected.summary.at("candidates"));
  EXPECT_EQ(got.summary.at("states"), expected.summary.at("states"));
  // The resumed run explored only what the killed one had not finished.
  const nlohmann::json summary =
      nlohmann::json::parse(readWholeFile((scratch_ / "resumed" / "summary.json").string()));
  int explored = 0;
  for (const nlohmann::json& rank : summary.at("ranks")) explored += rank.at("subtrees").get<int>();
  EXPECT_EQ(explored + static_cast<int>(saved.at("completed").size()),
            summary.at("subtrees").get<int>());
}

// A model's subgraphs dealt out whole to the ranks: every file is the file of one process.
TEST_F(MpiCli, AModelsSubgraphsOverOneTwoAndThreeRanksWriteWhatOneProcessWrites) {
  const auto command = [&](const std::string& out) { return modelSearch(out); };
  const auto check = [](int ranks, const CliResult& r, const fs::path& out) {
    // Rank 0 prints one line per subgraph, and the summary records every rank.
    size_t lines = 0;
    for (size_t at = r.err.find("/4] "); at != std::string::npos; at = r.err.find("/4] ", at + 1)) {
      ++lines;
    }
    EXPECT_EQ(lines, 4u) << r.err;
    const nlohmann::json summary =
        nlohmann::json::parse(readWholeFile((out / "summary.json").string()));
    EXPECT_EQ(summary.at("spread"), "items");
    ASSERT_EQ(summary.at("ranks").size(), static_cast<size_t>(ranks));
    int subgraphs = 0;
    for (const nlohmann::json& rank : summary.at("ranks")) {
      subgraphs += rank.at("subgraphs").get<int>();
      EXPECT_EQ(rank.at("threads"), rank.at("subgraphs").get<int>() > 0 ? 1 : 0) << summary.dump();
    }
    EXPECT_EQ(subgraphs, 4);
  };
  EXPECT_GT(expectTheFilesOfOneProcessOverRanks(command, check).size(), 8u);
}

TEST_F(MpiCli, AModelWhoseRankIsKilledResumesItsUnfinishedSubgraphs) {
  const auto args = [&](const std::string& out) { return modelSearch(out); };
  const CliResult alone = runMugraph(args("alone"), scratch_.string());
  ASSERT_EQ(alone.exitCode, 0) << alone.err;
  // Rank 1 kills itself once rank 0 has put a first subgraph's folder in place.
  const std::string firstFolder = (scratch_ / "killed" / "node_*" / "program.mg").string();
  const std::string killRankOne = killRankOneOnce("ls " + firstFolder + " >/dev/null 2>&1");
  const CliResult killed =
      runMugraph(args("killed"), scratch_.string(), killedRanksScratch(), mpirun(2, killRankOne));
  ASSERT_NE(killed.exitCode, 0) << killed.err;
  EXPECT_NE(killed.err.find("--resume"), std::string::npos) << killed.err;
  const nlohmann::json before =
      nlohmann::json::parse(readWholeFile((scratch_ / "killed" / "summary.json").string()));
  const size_t kept = before.at("subgraphs").size();
  EXPECT_GE(kept, 1u);
  EXPECT_LT(kept, 4u) << "the kill came after the run";

  const CliResult resumed =
      runMugraph(args("killed") + " --resume", scratch_.string(), "", mpirun(2));
  ASSERT_EQ(resumed.exitCode, 0) << resumed.err;
  EXPECT_NE(resumed.err.find("resuming: " + std::to_string(kept) + " of 4"), std::string::npos)
      << resumed.err;
  EXPECT_EQ(filesWithoutTimes(scratch_ / "killed"), filesWithoutTimes(scratch_ / "alone"));
  // Only the subgraphs the killed run had not finished were searched again.
  const nlohmann::json after =
      nlohmann::json::parse(readWholeFile((scratch_ / "killed" / "summary.json").string()));
  int searched = 0;
  for (const nlohmann::json& rank : after.at("ranks")) searched += rank.at("subgraphs").get<int>();
  EXPECT_EQ(static_cast<size_t>(searched) + kept, 4u);
}

// A dataset's programs dealt out whole: every file (manifest.jsonl holds every file's SHA-256)
// is the file of one process; a run whose rank is killed resumes to that same dataset.
TEST_F(MpiCli, ADatasetsProgramsOverRanksAndAfterAKillAreTheDatasetOfOneProcess) {
  const std::string programs = std::string(MUGRAPH_SOURCE_DIR) + "/tools/bench/dataset_programs/";
  const auto args = [&](const std::string& out) {
    return "dataset " + programs + "gemm_32x128x128.mg " + programs + "gemm_64x128x64.mg " +
           programs + "gemm_silu_128.mg --threads 1 --max-variants 2 --out " +
           (scratch_ / out).string();
  };
  const auto check = [](int ranks, const CliResult& r, const fs::path&) {
    EXPECT_NE(r.err.find("dataset: rank " + std::to_string(ranks - 1) + ":"), std::string::npos)
        << r.err;
  };
  const std::map<std::string, std::string> expected =
      expectTheFilesOfOneProcessOverRanks(args, check);
  ASSERT_GT(expected.size(), 10u);
  const std::string manifest = (scratch_ / "killed" / "manifest.jsonl").string();
  const std::string killRankOne = killRankOneOnce("[ -s " + manifest + " ]");
  const CliResult killed =
      runMugraph(args("killed"), scratch_.string(), killedRanksScratch(), mpirun(2, killRankOne));
  ASSERT_NE(killed.exitCode, 0) << killed.err;
  const CliResult resumed =
      runMugraph(args("killed") + " --resume", scratch_.string(), "", mpirun(2));
  ASSERT_EQ(resumed.exitCode, 0) << resumed.err;
  EXPECT_NE(resumed.err.find("is already in"), std::string::npos) << resumed.err;
  EXPECT_EQ(filesWithoutTimes(scratch_ / "killed"), expected);
}

// A dataset's searches spread over the ranks (--spread searches); rank 0 writes it, byte for
// byte as one process does (manifest.jsonl holds every file's SHA-256).
TEST_F(MpiCli, DatasetOverTwoRanksIsTheDatasetOfOneProcess) {
  const std::string gemm = (scratch_ / "gemm.mg").string();
  std::ofstream(gemm) << "program small_gemm\n"
                         "input A f16 [64, 128]\n"
                         "input B f16 [128, 64]\n"
                         "C = matmul(A, B)\n"
                         "output C\n";
  const std::string args =
      "dataset " + gemm + " --threads 1 --max-variants 3 --spread searches --out ";
  const CliResult alone = runMugraph(args + (scratch_ / "alone").string(), scratch_.string());
  ASSERT_EQ(alone.exitCode, 0) << alone.err;
  const CliResult two =
      runMugraph(args + (scratch_ / "two").string(), scratch_.string(), "", mpirun(2));
  ASSERT_EQ(two.exitCode, 0) << two.err;
  const std::string manifest = readWholeFile((scratch_ / "alone" / "manifest.jsonl").string());
  EXPECT_FALSE(manifest.empty());
  EXPECT_EQ(readWholeFile((scratch_ / "two" / "manifest.jsonl").string()), manifest);
  EXPECT_EQ(readWholeFile((scratch_ / "two" / "classes.json").string()),
            readWholeFile((scratch_ / "alone" / "classes.json").string()));
}

}  // namespace
}  // namespace mugraph::testing
