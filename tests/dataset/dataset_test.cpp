// `mugraph dataset` end to end on small saved schedules (no search, no GPU): a dataset
// passes `dataset check`; each variant folder is named by the hash of its schedule.json; a
// corrupted file, a deleted PTX and a truncated manifest row are each reported; a run
// interrupted mid-way (cancelled through the builder's progress observer, or killed) and
// rerun ends with exactly an uninterrupted run's manifest and classes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "codegen/generate.h"
#include "dataset/dataset_builder.h"
#include "graph/files.h"
#include "graph/hash.h"
#include "graph/malformed_cases.h"
#include "tools/run_cli.h"

namespace mugraph::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class DatasetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    scratch_ = fs::temp_directory_path() /
               ("mugraph_dataset_test_" + std::to_string(::getpid()) + "_" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(scratch_);
    fs::create_directories(scratch_ / "schedules");
    // One class of three tilings of a small batched matmul (the table's valid schedule with
    // for-loops of 4, 2 and 1 steps).
    const std::string base = kValidScheduleJson;
    writeFile("schedules/mm_f4.json", base);
    writeFile("schedules/mm_f2.json",
              withChange(withChange(base, "\"forloop\": 4", "\"forloop\": 2"),
                         "\"name\": \"mm.split\"", "\"name\": \"mm.f2\""));
    writeFile("schedules/mm_f1.json",
              withChange(withChange(withChange(withChange(base, "\"forloop\": 4", "\"forloop\": 1"),
                                               "\"fmap\": 2}", "\"fmap\": -1}"),
                                    "\"fmap\": 1}", "\"fmap\": -1}"),
                         "\"name\": \"mm.split\"", "\"name\": \"mm.f1\""));
  }
  void TearDown() override { fs::remove_all(scratch_); }

  void writeFile(const std::string& relative, const std::string& contents) {
    std::ofstream(scratch_ / relative) << contents;
  }
  std::string read(const fs::path& path) { return readWholeFile(path.string()); }
  CliResult run(const std::string& args) { return runMugraph(args, scratch_.string()); }
  CliResult build(const std::string& out) {
    return run("dataset --from-schedules " + (scratch_ / "schedules").string() + " --out " +
               (scratch_ / out).string());
  }
  CliResult check(const std::string& dir) {
    return run("dataset check " + (scratch_ / dir).string());
  }
  // The saved schedules as one class, as `dataset --from-schedules` reads them.
  dataset::DatasetClassInput savedClass() {
    dataset::DatasetClassInput cls;
    for (const char* file : {"mm_f1.json", "mm_f2.json", "mm_f4.json"}) {
      const graph::Schedule schedule =
          graph::loadSchedule((scratch_ / "schedules" / file).string());
      cls.program = schedule.program;
      cls.schedules.push_back(schedule);
    }
    return cls;
  }
  std::string firstVariantFolder(const std::string& dir) {
    for (const auto& cls : fs::directory_iterator(scratch_ / dir)) {
      if (!cls.is_directory()) continue;
      for (const auto& v : fs::directory_iterator(cls.path())) return v.path().string();
    }
    return "";
  }

  fs::path scratch_;
};

TEST_F(DatasetTest, ABuiltDatasetPassesItsCheckAndDescribesEveryVariant) {
  const CliResult built = build("ds");
  ASSERT_EQ(built.exitCode, 0) << built.out << built.err;
  EXPECT_THAT(built.out, HasSubstr("1 classes, 3 variants (3 written"));
  const CliResult checked = check("ds");
  EXPECT_EQ(checked.exitCode, 0) << checked.out << checked.err;
  EXPECT_THAT(checked.out, HasSubstr("3 rows, 3 variants checked"));

  std::ifstream manifest(scratch_ / "ds" / "manifest.jsonl");
  std::string line;
  int rows = 0;
  while (std::getline(manifest, line)) {
    ++rows;
    const auto row = nlohmann::json::parse(line);
    EXPECT_EQ(row.at("variant").get<std::string>().substr(0, 1), "v");
    EXPECT_EQ(row.at("verification").at("level"), "finite-field");
    EXPECT_LE(row.at("verification").at("false_accept_bound").get<double>(), 1e-12);
    EXPECT_FALSE(row.at("kernels").empty());
    EXPECT_TRUE(row.at("files").contains("sm_90.ptx"));
    EXPECT_EQ(row.at("files").at("kernel.cu").at("sha256").get<std::string>().size(), 64u);
    EXPECT_TRUE(row.at("resources").contains("sm_90"));
    EXPECT_TRUE(row.at("nvrtc").contains("version"));
  }
  EXPECT_EQ(rows, 3);
  const auto classes = nlohmann::json::parse(read(scratch_ / "ds" / "classes.json"));
  EXPECT_EQ(classes.at("classes").size(), 1u);
  EXPECT_EQ(classes.at("classes")[0].at("members").size(), 3u);
  EXPECT_THAT(classes.at("equivalence").get<std::string>(), HasSubstr("reassociation"));
}

TEST_F(DatasetTest, EachVariantFolderIsNamedByItsScheduleHash) {
  ASSERT_EQ(build("ds").exitCode, 0);
  int variants = 0;
  for (const auto& cls : fs::directory_iterator(scratch_ / "ds")) {
    if (!cls.is_directory()) continue;
    for (const auto& variant : fs::directory_iterator(cls.path())) {
      ++variants;
      const graph::Schedule schedule =
          graph::loadSchedule((variant.path() / "schedule.json").string());
      EXPECT_EQ(graph::variantName(schedule), variant.path().filename().string());
    }
  }
  EXPECT_EQ(variants, 3);
}

TEST_F(DatasetTest, CheckReportsACorruptedFileADeletedPtxAndATruncatedRow) {
  ASSERT_EQ(build("ds").exitCode, 0);
  for (const char* damage : {"corrupt", "delete", "truncate"}) {
    SCOPED_TRACE(damage);
    const std::string copy = std::string("ds_") + damage;
    fs::copy(scratch_ / "ds", scratch_ / copy, fs::copy_options::recursive);
    const std::string variant = firstVariantFolder(copy);
    std::string expected;
    if (std::string(damage) == "corrupt") {
      std::ofstream(variant + "/kernel.cu", std::ios::app) << "// tampered\n";
      expected = "kernel.cu does not match its sha256";
    } else if (std::string(damage) == "delete") {
      fs::remove(variant + "/sm_90.ptx");
      expected = "sm_90.ptx is missing";
    } else {
      const std::string manifest = read(scratch_ / copy / "manifest.jsonl");
      const size_t firstEnd = manifest.find('\n');
      writeFile(copy + "/manifest.jsonl",
                manifest.substr(0, firstEnd / 2) + manifest.substr(firstEnd));
      expected = "manifest.jsonl:1: not valid JSON";
    }
    const CliResult r = check(copy);
    EXPECT_EQ(r.exitCode, 1) << r.out << r.err;
    EXPECT_THAT(r.out, HasSubstr(expected));
  }
}

// A dataset's files are data: a row whose fields have the wrong types, a file path that leaves
// the dataset and a malformed classes.json are each a problem of the check (exit 1), never an
// internal error and never a read outside the folder.
TEST_F(DatasetTest, CheckReportsMistypedRowsOutsidePathsAndMalformedClassesAsProblems) {
  ASSERT_EQ(build("ds").exitCode, 0);
  const std::string manifest = read(scratch_ / "ds" / "manifest.jsonl");
  const size_t firstEnd = manifest.find('\n');
  nlohmann::json row = nlohmann::json::parse(manifest.substr(0, firstEnd));
  for (const char* damage : {"mistyped", "outside", "classes"}) {
    SCOPED_TRACE(damage);
    const std::string copy = std::string("ds_") + damage;
    fs::copy(scratch_ / "ds", scratch_ / copy, fs::copy_options::recursive);
    nlohmann::json changed = row;
    std::string expected;
    if (std::string(damage) == "mistyped") {
      changed["verification"] = "yes";
      expected = "malformed: ";
    } else if (std::string(damage) == "outside") {
      changed["files"]["kernel.cu"]["path"] = "../../../../../../etc/hostname";
      expected = "file kernel.cu has a path outside the dataset";
    } else {
      writeFile(copy + "/classes.json", R"({"equivalence": "x", "classes": [5]})");
      expected = "classes.json: $.classes[0]: expected an object";
    }
    writeFile(copy + "/manifest.jsonl", changed.dump() + manifest.substr(firstEnd));
    const CliResult r = check(copy);
    EXPECT_EQ(r.exitCode, 1) << r.out << r.err;
    EXPECT_THAT(r.out, HasSubstr(expected));
  }
}

TEST_F(DatasetTest, AnInterruptedRunRerunEqualsAnUninterruptedRun) {
  ASSERT_EQ(build("whole").exitCode, 0);
  // Cancelled by its progress observer right after its first variant is on disk...
  struct Cancelled {};
  dataset::DatasetOptions options;
  options.outDir = (scratch_ / "resumed").string();
  options.archs = codegen::parseArchList(codegen::kDefaultArchList);  // as the CLI's default
  options.progress = [](const std::string& line) {
    if (line.rfind("wrote ", 0) == 0) throw Cancelled{};
  };
  EXPECT_THROW(dataset::buildDataset({savedClass()}, options), Cancelled);
  const std::string partial = read(scratch_ / "resumed" / "manifest.jsonl");
  EXPECT_EQ(std::count(partial.begin(), partial.end(), '\n'), 1) << partial;
  const CliResult rerun = build("resumed");
  ASSERT_EQ(rerun.exitCode, 0) << rerun.err;
  EXPECT_THAT(rerun.out, HasSubstr("1 already there"));
  // ...and by a real SIGKILL at an arbitrary moment.
  runMugraph("dataset --from-schedules " + (scratch_ / "schedules").string() + " --out " +
                 (scratch_ / "killed").string(),
             scratch_.string(), "", "timeout -s KILL 0.25");
  ASSERT_EQ(build("killed").exitCode, 0);
  for (const char* dir : {"resumed", "killed"}) {
    SCOPED_TRACE(dir);
    EXPECT_EQ(read(scratch_ / dir / "manifest.jsonl"), read(scratch_ / "whole" / "manifest.jsonl"));
    EXPECT_EQ(read(scratch_ / dir / "classes.json"), read(scratch_ / "whole" / "classes.json"));
    EXPECT_EQ(check(dir).exitCode, 0);
  }
}

// A kill between the manifest's write and classes.json's leaves classes.json behind (here: its
// members emptied by hand); the rerun finds every variant there and still rewrites the index.
TEST_F(DatasetTest, AClassesFileLeftBehindTheManifestIsRewrittenByTheRerun) {
  ASSERT_EQ(build("whole").exitCode, 0);
  ASSERT_EQ(build("stale").exitCode, 0);
  const std::filesystem::path classes = scratch_ / "stale" / "classes.json";
  nlohmann::json behind = nlohmann::json::parse(read(classes));
  for (auto& cls : behind.at("classes")) cls["members"] = nlohmann::json::array();
  std::ofstream(classes) << behind.dump(2) << "\n";
  EXPECT_NE(check("stale").exitCode, 0);
  const CliResult rerun = build("stale");
  ASSERT_EQ(rerun.exitCode, 0) << rerun.err;
  EXPECT_EQ(read(classes), read(scratch_ / "whole" / "classes.json"));
  EXPECT_EQ(check("stale").exitCode, 0);
}

TEST_F(DatasetTest, AScheduleGivenTwiceIsBuiltOnceOnSeveralThreads) {
  dataset::DatasetClassInput cls = savedClass();
  cls.schedules.push_back(cls.schedules.front());
  dataset::DatasetOptions options;
  options.outDir = (scratch_ / "twice").string();
  options.threads = 2;
  const dataset::DatasetSummary summary = dataset::buildDataset({cls}, options);
  EXPECT_EQ(summary.variants, 4);
  EXPECT_EQ(summary.written, 3);
  EXPECT_EQ(summary.skipped, 1);
  EXPECT_EQ(summary.rejected, 0);
  const CliResult checked = check("twice");
  EXPECT_EQ(checked.exitCode, 0) << checked.out << checked.err;
  EXPECT_THAT(checked.out, HasSubstr("3 rows, 3 variants checked"));
}

}  // namespace
}  // namespace mugraph::testing
