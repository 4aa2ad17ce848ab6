// What the builds with and without MPI share for whole jobs over ranks: the --spread choice,
// the GPU each rank takes (no GPU is needed to test the choice), and a folder as bytes and back.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>

#include "distributed/folder_bytes.h"
#include "distributed/ranks.h"
#include "distributed/work_queue.h"

namespace mugraph::distributed {
namespace {

namespace fs = std::filesystem;

TEST(Spread, AutoDealsWholeItemsOnlyWhenEveryRankGetsOne) {
  EXPECT_EQ(chooseSpread("auto", 10, 4), Spread::kWholeItems);
  EXPECT_EQ(chooseSpread("auto", 4, 4), Spread::kWholeItems);
  EXPECT_EQ(chooseSpread("auto", 3, 8), Spread::kEachSearch);
  EXPECT_EQ(chooseSpread("items", 1, 8), Spread::kWholeItems);
  EXPECT_EQ(chooseSpread("searches", 100, 2), Spread::kEachSearch);
  EXPECT_THROW(chooseSpread("ranks", 1, 1), std::invalid_argument);
}

TEST(Spread, EveryItemIsCollectedOnceEitherWay) {
  for (Spread spread : {Spread::kWholeItems, Spread::kEachSearch}) {
    std::vector<int> collected;
    WorkItems work;
    work.items = {3, 1, 2};
    work.run = [](int item) { return std::any(ranks() * 100 + item); };
    work.encode = [](const std::any& r) { return std::to_string(std::any_cast<int>(r)); };
    work.decode = [](const std::string& bytes) { return std::any(std::stoi(bytes)); };
    work.collect = [&](int item, std::any&& result, double) {
      // Inside a whole item the process is a job of its own: one rank.
      EXPECT_EQ(std::any_cast<int>(result), 100 + item);
      collected.push_back(item);
    };
    runItems(work, spread);
    EXPECT_EQ(collected, (std::vector<int>{3, 1, 2})) << spreadName(spread);
  }
}

TEST(GpuChoice, RanksOnAHostTakeItsGpusInTurn) {
  EXPECT_EQ(deviceForRank(0, 8), 0);
  EXPECT_EQ(deviceForRank(5, 8), 5);
  EXPECT_EQ(deviceForRank(9, 8), 1);
  // One search's variants are timed only on the ranks whose device no other rank takes.
  EXPECT_TRUE(hasGpuOfItsOwn(0, 1));
  EXPECT_FALSE(hasGpuOfItsOwn(1, 1));
  EXPECT_TRUE(hasGpuOfItsOwn(7, 8));
  EXPECT_FALSE(hasGpuOfItsOwn(8, 8));
  EXPECT_FALSE(hasGpuOfItsOwn(0, 0));
  EXPECT_EQ(deviceForRank(3, 1), 0);
  EXPECT_THROW(deviceForRank(0, 0), std::invalid_argument);
}

TEST(GpuChoice, TheLocalRankComesFromTheLauncherElseTheJobRank) {
  std::map<std::string, std::string> env;
  const auto read = [&env](const char* name) -> const char* {
    const auto found = env.find(name);
    return found == env.end() ? nullptr : found->second.c_str();
  };
  EXPECT_EQ(localRank(read, 6), 6);
  env["SLURM_LOCALID"] = "2";
  EXPECT_EQ(localRank(read, 6), 2);
  env["OMPI_COMM_WORLD_LOCAL_RANK"] = "3";
  EXPECT_EQ(localRank(read, 6), 3);
  env["OMPI_COMM_WORLD_LOCAL_RANK"] = "x";  // not a number: the next variable
  EXPECT_EQ(localRank(read, 6), 2);
  // Rank 3 on a host of 2 GPUs profiles on GPU 1.
  env["OMPI_COMM_WORLD_LOCAL_RANK"] = "3";
  EXPECT_EQ(deviceForRank(localRank(read, 11), 2), 1);
}

TEST(FolderBytes, AFolderComesBackByteForByte) {
  const fs::path dir = fs::temp_directory_path() / ("mugraph_folder_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "a" / "b");
  const std::string binary("\0\n7\nx\xff", 6);
  std::ofstream(dir / "top.txt") << "top\n";
  std::ofstream(dir / "a" / "b" / "kernel.cubin", std::ios::binary) << binary;
  std::ofstream(dir / "a" / "empty");
  const std::string packed = packFolder(dir.string());
  unpackFolder(packed, (dir / "copy").string());
  const auto read = [](const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  };
  EXPECT_EQ(read(dir / "copy" / "top.txt"), "top\n");
  EXPECT_EQ(read(dir / "copy" / "a" / "b" / "kernel.cubin"), binary);
  EXPECT_TRUE(fs::exists(dir / "copy" / "a" / "empty"));
  EXPECT_EQ(packFolder((dir / "copy").string()), packed);
  EXPECT_THROW(unpackFolder("../evil\n1\nx", (dir / "bad").string()), std::runtime_error);
  EXPECT_THROW(unpackFolder("f\n10\nx", (dir / "bad").string()), std::runtime_error);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace mugraph::distributed
