// `mugraph superoptimize model.onnx` as a user runs it: DIR/summary.json lists the subgraph
// with its ONNX nodes, program file, verified count and best variant, each subgraph folder
// holds the variants' code; --json prints the same summary; bad models exit 2 with one line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tools/run_cli.h"

namespace mugraph::testing {
namespace {

namespace fs = std::filesystem;

class SuperoptimizeModelCli : public ::testing::Test {
 protected:
  void SetUp() override {
    scratch_ = fs::temp_directory_path() / ("mugraph_onnx_cli_" + std::to_string(::getpid()));
    fs::create_directories(scratch_);
  }
  void TearDown() override { fs::remove_all(scratch_); }
  CliResult run(const std::string& args) { return runMugraph(args, scratch_.string()); }
  static std::string model(const std::string& name) {
    return sourceDir() + "/tests/onnx_import/models/" + name + ".onnx";
  }
  fs::path scratch_;
};

TEST_F(SuperoptimizeModelCli, RmsNormModelWritesSubgraphFolderAndSummary) {
  const fs::path out = scratch_ / "out";
  const CliResult r =
      run("superoptimize '" + model("rmsnorm") +
          "' --threads 2 --time-limit 20 --max-variants 2 --json --out '" + out.string() + "'");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const nlohmann::json printed = nlohmann::json::parse(r.out);
  const nlohmann::json written =
      nlohmann::json::parse(readWholeFile((out / "summary.json").string()));
  EXPECT_EQ(printed, written);
  EXPECT_EQ(written["subgraphs_total"], 1);
  ASSERT_EQ(written["subgraphs"].size(), 1u);
  EXPECT_TRUE(written["unsupported"].empty());
  const nlohmann::json& s = written["subgraphs"][0];
  EXPECT_EQ(s["ops"].size(), s["nodes"].size());
  EXPECT_GE(s["verified"].get<int>(), 1);
  EXPECT_EQ(s["best"]["level"], "finite-field");
  const std::string name = s["name"];
  EXPECT_TRUE(fs::exists(out / s["program"].get<std::string>()));
  const fs::path best = out / name / s["best"]["name"].get<std::string>();
  EXPECT_TRUE(fs::exists(best / "kernel.cu")) << best;
  EXPECT_TRUE(fs::exists(best / "schedule.json"));
  EXPECT_TRUE(fs::exists(out / name / "summary.json"));
  // One progress line per subgraph on stderr, before and after its search.
  EXPECT_NE(r.err.find("[1/1] " + name + ": "), std::string::npos) << r.err;
  // The written program is a program file the other commands read.
  const CliResult shown = run("show '" + (out / s["program"].get<std::string>()).string() + "'");
  EXPECT_EQ(shown.exitCode, 0) << shown.err;
  EXPECT_NE(shown.out.find("add_scalar"), std::string::npos) << shown.out;
}

// A subgraph the search's limits leave without a variant (the MLP's six ops, one kernel of
// one op) says why in its summary entry, and the command exits 1.
TEST_F(SuperoptimizeModelCli, ASubgraphWithoutVariantsSaysWhyAndExitsOne) {
  const CliResult r = run("superoptimize '" + model("llama_mlp") +
                          "' --threads 1 --max-kernels 1 --max-block-ops 1 --no-split --json");
  EXPECT_EQ(r.exitCode, 1) << r.err;
  const nlohmann::json summary = nlohmann::json::parse(r.out);
  ASSERT_EQ(summary["subgraphs"].size(), 1u);
  const nlohmann::json& s = summary["subgraphs"][0];
  EXPECT_EQ(s["verified"], 0);
  EXPECT_TRUE(s["best"].is_null());
  EXPECT_NE(s["no_variants"].get<std::string>().find("no candidate within its limits"),
            std::string::npos)
      << s.dump();
}

TEST_F(SuperoptimizeModelCli, BadModelsExitTwoWithOneLine) {
  const std::string truncated = (scratch_ / "truncated.onnx").string();
  const std::string bytes = readWholeFile(model("llama_mlp"));
  std::ofstream(truncated, std::ios::binary) << bytes.substr(0, bytes.size() / 3);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"'" + truncated + "'", "does not parse"},
      {"'" + model("llama_mlp_dynamic_seq") + "' --dim-range seq=8:4", "min 8 > max 4"},
      {"'" + model("llama_mlp_dynamic_seq") + "' --dim-range seq=8", "is not name=min:max"},
      {"'" + model("llama_mlp") + "' --dim-range seq=1:64", "names no dynamic dim"},
      {"'" + model("llama_mlp") + "' --dim seq=4", "names no dynamic dim"},
      {"'" + model("llama_mlp_dynamic_seq") + "' --dim s0", "is not name=value"},
      {"'" + model("rmsnorm") + "' --checkpoint c.json", "applies to one program"},
      {"'" + model("rmsnorm") + "' --resume", "for a model, resumes from --out DIR"},
      {"'" + model("rmsnorm") + "' --spread ranks", "is none of auto, items, searches"},
  };
  for (const auto& [args, reason] : cases) {
    const CliResult r = run("superoptimize " + args + " --time-limit 1");
    EXPECT_EQ(r.exitCode, 2) << args << ": " << r.err;
    EXPECT_NE(r.err.find(reason), std::string::npos) << args << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

// Issue 31: mutated exports whose node or value name is not UTF-8 ran the whole search and
// then died writing summary.json (exit 3). They exit 2 before any search, write nothing, and
// print the name's bytes escaped, so the terminal sees valid UTF-8.
TEST_F(SuperoptimizeModelCli, ANameThatIsNotTextExitsTwoBeforeTheSearch) {
  for (const char* name : {"rmsnorm_bad_node_name", "rmsnorm_bad_value_name"}) {
    const fs::path out = scratch_ / name;
    const CliResult r =
        run("superoptimize '" + model(name) + "' --time-limit 20 --out '" + out.string() + "'");
    EXPECT_EQ(r.exitCode, 2) << name << ": " << r.err;
    EXPECT_EQ(r.err.find("searching"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("is not text"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find_first_of("\xc3\xff"), std::string::npos) << "raw bytes: " << r.err;
    EXPECT_NE(r.err.find("\\x"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out / "summary.json"));
  }
}

}  // namespace
}  // namespace mugraph::testing
