// External members (dataset/external_member.h) on a committed Triton member of a small GEMM
// (tests/dataset/external_fixture, written by tools/python/add_external_members.py): `dataset
// add` takes it with an unchecked gpu-random-test row and `dataset check` passes; each planted
// fault (a corrupted PTX, a member labeled with a program it does not compute, finite-field
// evidence claimed, a pass without trials, a parameter dropped from the ABI, the row's grid edited,
// a failed member still listed as a member) is reported; `dataset add` refuses an incomplete
// folder.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "dataset/sha256.h"
#include "tools/run_cli.h"

namespace mugraph::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;

class ExternalMemberTest : public ::testing::Test {
 protected:
  void SetUp() override {
    scratch_ = fs::temp_directory_path() /
               ("mugraph_external_test_" + std::to_string(::getpid()) + "_" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(scratch_);
    fs::create_directories(scratch_);
    fs::copy(fs::path(sourceDir()) / "tests/dataset/external_fixture/triton_member",
             scratch_ / "member", fs::copy_options::recursive);
  }
  void TearDown() override { fs::remove_all(scratch_); }

  CliResult run(const std::string& args) { return runMugraph(args, scratch_.string()); }
  CliResult add(const std::string& dir, const std::string& member = "member") {
    return run("dataset add " + (scratch_ / dir).string() + " " + (scratch_ / member).string());
  }
  CliResult check(const std::string& dir) {
    return run("dataset check " + (scratch_ / dir).string());
  }
  json onlyRow(const std::string& dir) {
    std::ifstream in(scratch_ / dir / "manifest.jsonl");
    std::string line;
    std::getline(in, line);
    return json::parse(line);
  }
  void writeRow(const std::string& dir, const json& row) {
    std::ofstream(scratch_ / dir / "manifest.jsonl") << row.dump() << "\n";
  }
  // Rewrites a file of the added member and its digest in the row, so only the fault planted
  // in its contents is left to find.
  void editMemberFile(const std::string& dir, const std::string& name,
                      const std::function<void(json&)>& edit) {
    json row = onlyRow(dir);
    const fs::path path = scratch_ / dir / row.at("files").at(name).at("path").get<std::string>();
    json contents = json::parse(readWholeFile(path.string()));
    edit(contents);
    std::ofstream(path) << contents.dump(2);
    row["files"][name]["sha256"] = dataset::sha256OfFile(path.string());
    writeRow(dir, row);
  }

  fs::path scratch_;
};

TEST_F(ExternalMemberTest, AnAddedMemberIsUncheckedAndPassesTheCheck) {
  const CliResult added = add("ds");
  ASSERT_EQ(added.exitCode, 0) << added.out << added.err;
  EXPECT_THAT(added.out, HasSubstr("added gemm_128-"));
  EXPECT_THAT(added.out, HasSubstr("/triton-"));
  const json row = onlyRow("ds");
  EXPECT_EQ(row.at("member"), "external");
  EXPECT_EQ(row.at("source").at("compiler"), "triton");
  EXPECT_THAT(row.at("source").at("command").get<std::string>(),
              HasSubstr("add_external_members.py"));
  EXPECT_EQ(row.at("verification").at("level"), "gpu-random-test");
  EXPECT_EQ(row.at("verification").at("status"), "unchecked");
  // The whole ABI: output, inputs, then Triton's two scratch pointers.
  const json params = row.at("kernels").at(0).at("params");
  ASSERT_EQ(params.size(), 5u);
  EXPECT_EQ(params[0].at("tensor"), "C");
  EXPECT_EQ(params[3].at("tensor"), "triton_global_scratch");
  const CliResult checked = check("ds");
  EXPECT_EQ(checked.exitCode, 0) << checked.out;
  EXPECT_THAT(checked.out, HasSubstr("1 rows, 1 variants checked (1 external, 0 kept out)"));
  const json classes = json::parse(readWholeFile((scratch_ / "ds" / "classes.json").string()));
  EXPECT_EQ(classes.at("classes")[0].at("members").size(), 1u);
  EXPECT_THAT(classes.at("equivalence").get<std::string>(), HasSubstr("gpu-random-test"));
}

TEST_F(ExternalMemberTest, CheckCatchesEachPlantedFaultInAnExternalRow) {
  ASSERT_EQ(add("ds").exitCode, 0);
  const json row = onlyRow("ds");
  struct Fault {
    const char* name;
    std::function<void(const std::string& copy)> plant;
    std::string expected;
  };
  const std::vector<Fault> faults = {
      {"corrupted ptx",
       [&](const std::string& copy) {
         std::ofstream(
             scratch_ / copy / row.at("files").at("sm_90.ptx").at("path").get<std::string>(),
             std::ios::app)
             << "// tampered\n";
       },
       "sm_90.ptx does not match its sha256"},
      {"labeled with another program",
       [&](const std::string& copy) {
         json r = row;
         const std::string path = r.at("files").at("program.mg").at("path").get<std::string>();
         std::ofstream(scratch_ / copy / path) << "program gemm_128\ninput A f16 [128, 64]\n"
                                                  "input B f16 [64, 256]\nC = matmul(A, B)\n"
                                                  "output C\n";
         r["files"]["program.mg"]["sha256"] =
             dataset::sha256OfFile((scratch_ / copy / path).string());
         writeRow(copy, r);
       },
       "not the class's program (mislabeled)"},
      {"finite-field claimed",
       [&](const std::string& copy) {
         json r = row;
         r["verification"]["level"] = "finite-field";
         writeRow(copy, r);
       },
       "evidence must be level gpu-random-test"},
      {"passed without trials",
       [&](const std::string& copy) {
         json r = row;
         r["verification"]["status"] = "passed";
         writeRow(copy, r);
       },
       "passed without recorded trials"},
      {"parameter dropped",
       [&](const std::string& copy) {
         editMemberFile(copy, "manifest.json", [](json& m) { m["kernels"][0]["params"].erase(4); });
       },
       "takes 5 parameters; manifest.json lists 4"},
      {"grid edited in the row",
       [&](const std::string& copy) {
         json r = row;
         r["kernels"][0]["grid"] = {2, 1, 1};
         writeRow(copy, r);
       },
       "the row's kernels are not manifest.json's"},
      {"failed but still a member",
       [&](const std::string& copy) {
         json r = row;
         r["verification"] = {
             {"level", "gpu-random-test"}, {"status", "failed"}, {"reason", "planted"}};
         writeRow(copy, r);
       },
       "as excluded"},
  };
  for (const Fault& fault : faults) {
    SCOPED_TRACE(fault.name);
    const std::string copy = std::string("ds_") + std::to_string(&fault - faults.data());
    fs::copy(scratch_ / "ds", scratch_ / copy, fs::copy_options::recursive);
    fault.plant(copy);
    const CliResult r = check(copy);
    EXPECT_EQ(r.exitCode, 1) << r.out << r.err;
    EXPECT_THAT(r.out, HasSubstr(fault.expected));
  }
}

TEST_F(ExternalMemberTest, AddRefusesAFolderWhoseAbiIsIncomplete) {
  json manifest = json::parse(readWholeFile((scratch_ / "member" / "manifest.json").string()));
  manifest["tensors"].erase(1);  // B: an input of the program left unbound
  for (json& param : manifest["kernels"][0]["params"]) {
    if (param.at("tensor") == "B") param["tensor"] = "A";
  }
  std::ofstream(scratch_ / "member" / "manifest.json") << manifest.dump(2);
  const CliResult r = add("ds");
  EXPECT_EQ(r.exitCode, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("incomplete launch ABI"));
  EXPECT_THAT(r.err, HasSubstr("'B' is not bound"));
}

TEST_F(ExternalMemberTest, AddRefusesAMemberThatDoesNotSayWhereItCameFrom) {
  json member = json::parse(readWholeFile((scratch_ / "member" / "member.json").string()));
  member["source"].erase("command");
  std::ofstream(scratch_ / "member" / "member.json") << member.dump(2);
  const CliResult r = add("ds");
  EXPECT_EQ(r.exitCode, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("$.source.command"));
}

}  // namespace
}  // namespace mugraph::testing
