// File handling: atomic writes that leave no temp file behind, clear errors for unwritable
// places and wrong file kinds, and save/load round trips through the extension dispatch.
#include "graph/files.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "graph/error.h"
#include "graph/hash.h"
#include "graph/json_format.h"
#include "graph/program_text.h"
#include "malformed_cases.h"
#include "random_graphs.h"

namespace mugraph::graph {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class Files : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = fs::temp_directory_path() /
              ("mugraph_files_" + std::to_string(::getpid()) + "_" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(folder_);
    fs::create_directories(folder_);
  }
  void TearDown() override { fs::remove_all(folder_); }

  std::string path(const std::string& name) const { return (folder_ / name).string(); }
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const fs::directory_entry& e : fs::directory_iterator(folder_)) {
      names.push_back(e.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  fs::path folder_;
};

TEST_F(Files, AtomicWriteLeavesOnlyTheFile) {
  writeFileAtomic(path("a.txt"), "first");
  EXPECT_EQ(readFileText(path("a.txt")), "first");
  writeFileAtomic(path("a.txt"), "second, longer contents");
  EXPECT_EQ(readFileText(path("a.txt")), "second, longer contents");
  writeFileAtomic(path("a.txt"), "");
  EXPECT_EQ(readFileText(path("a.txt")), "");
  EXPECT_EQ(entries(), std::vector<std::string>{"a.txt"});
}

TEST_F(Files, AtomicWriteKeepsTheModeOfAnOverwrittenFile) {
  writeFileAtomic(path("m.txt"), "x");
  fs::permissions(path("m.txt"), fs::perms::owner_read | fs::perms::owner_write);
  writeFileAtomic(path("m.txt"), "y");
  EXPECT_EQ(fs::status(path("m.txt")).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
}

TEST_F(Files, UnwritablePlacesAreUserErrors) {
  try {
    writeFileAtomic(path("missing/folder/a.json"), "x");
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_THAT(e.where(), HasSubstr("missing/folder/a.json"));
    EXPECT_THAT(e.reason(), HasSubstr("cannot write"));
    EXPECT_THAT(e.reason(), HasSubstr("No such file or directory"));
  }
  writeFileAtomic(path("plain"), "x");
  EXPECT_THROW(writeFileAtomic(path("plain/a.json"), "x"), UserError);  // a file, not a folder
  fs::create_directories(path("dir"));
  EXPECT_THROW(writeFileAtomic(path("dir"), "x"), UserError);  // a folder in the way
  EXPECT_EQ(entries(), (std::vector<std::string>{"dir", "plain"}));
}

TEST_F(Files, UnreadableFilesAreUserErrors) {
  EXPECT_THROW(readFileText(path("nope.json")), UserError);
  EXPECT_THROW(loadFile(path("nope.mg")), UserError);
  EXPECT_THROW(readFileText(folder_.string()), UserError);
}

TEST_F(Files, SaveAndLoadRoundTripEveryKind) {
  for (uint64_t seed = 0; seed < 20; ++seed) {
    SCOPED_TRACE(seed);
    testing::RandomGraphs random(seed);
    const Schedule schedule = random.schedule();
    saveSchedule(path("s.json"), schedule);
    const LoadedFile loaded = loadFile(path("s.json"));
    ASSERT_TRUE(loaded.schedule.has_value());
    EXPECT_TRUE(*loaded.schedule == schedule);
    EXPECT_TRUE(loaded.program == schedule.program);
    EXPECT_TRUE(loadSchedule(path("s.json")) == schedule);
    EXPECT_TRUE(loadProgram(path("s.json")) == schedule.program);
    EXPECT_EQ(scheduleHash(loaded.schedule.value()), scheduleHash(schedule));

    saveProgram(path("p.mg"), schedule.program);
    EXPECT_TRUE(loadProgram(path("p.mg")) == schedule.program);
    saveProgram(path("p.json"), schedule.program);
    const LoadedFile program = loadFile(path("p.json"));
    EXPECT_FALSE(program.schedule.has_value());
    EXPECT_TRUE(program.program == schedule.program);
  }
  EXPECT_EQ(entries(), (std::vector<std::string>{"p.json", "p.mg", "s.json"}));
}

TEST_F(Files, ProgramFileTextStartsWithFormatAndEndsWithNewline) {
  testing::RandomGraphs random(7);
  saveProgram(path("p.json"), random.program());
  const std::string text = readFileText(path("p.json"));
  EXPECT_THAT(text, HasSubstr("\"format\": \"mugraph.program\""));
  EXPECT_EQ(text.back(), '\n');
}

TEST_F(Files, LoadScheduleOnAProgramIsAClearError) {
  for (const char* name : {"p.mg", "p.json"}) {
    SCOPED_TRACE(name);
    std::ofstream(path(name)) << (std::string(name) == "p.mg" ? testing::kValidProgramText
                                                              : testing::kValidProgramJson);
    try {
      loadSchedule(path(name));
      FAIL() << "no error";
    } catch (const UserError& e) {
      EXPECT_EQ(e.where(), path(name));
      EXPECT_THAT(e.reason(), HasSubstr("this is a program, not a schedule"));
    }
  }
}

TEST_F(Files, SavingAnInvalidGraphIsRefused) {
  Program broken = testing::RandomGraphs(3).program();
  broken.outputs.clear();
  EXPECT_THROW(saveProgram(path("bad.json"), broken), UserError);
  EXPECT_TRUE(entries().empty());
}

TEST(ShippedSchedules, LoadAndRoundTripExactly) {
  int schedules = 0;
  for (const fs::directory_entry& entry :
       fs::directory_iterator(fs::path(MUGRAPH_SOURCE_DIR) / "schedules")) {
    const std::string path = entry.path().string();
    if (entry.path().extension() != ".json" && entry.path().extension() != ".mg") continue;
    SCOPED_TRACE(path);
    const LoadedFile loaded = loadFile(path);
    EXPECT_TRUE(parseProgramText(programToText(loaded.program), "again.mg") == loaded.program);
    if (!loaded.schedule) continue;
    ++schedules;
    const nlohmann::json json = scheduleToJson(*loaded.schedule);
    EXPECT_TRUE(scheduleFromJson(json, "again.json") == *loaded.schedule);
  }
  EXPECT_GT(schedules, 0);
}

}  // namespace
}  // namespace mugraph::graph
