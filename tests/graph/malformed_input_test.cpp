// Every malformed file in malformed_cases.h, loaded through the public API, is a UserError
// on one line that points at the right line or JSON path and says what is wrong.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cctype>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "graph/error.h"
#include "graph/files.h"
#include "graph/json_format.h"
#include "graph/program_text.h"
#include "malformed_cases.h"
#include "random_graphs.h"

namespace mugraph::graph {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

class MalformedInput : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ =
        std::filesystem::temp_directory_path() /
        ("mugraph_malformed_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
         "_" + std::to_string(reinterpret_cast<uintptr_t>(this)));
    std::filesystem::create_directories(folder_);
  }
  void TearDown() override { std::filesystem::remove_all(folder_); }

  std::string write(const std::string& name, const std::string& contents) {
    const std::string path = (folder_ / name).string();
    std::ofstream(path, std::ios::binary) << contents;
    return path;
  }

  std::filesystem::path folder_;
};

TEST_F(MalformedInput, TheValidBaseFilesLoad) {
  EXPECT_NO_THROW(loadFile(write("p.mg", testing::kValidProgramText)));
  EXPECT_NO_THROW(loadFile(write("p.json", testing::kValidProgramJson)));
  const LoadedFile loaded = loadFile(write("s.json", testing::kValidScheduleJson));
  ASSERT_TRUE(loaded.schedule.has_value());
  EXPECT_EQ(loaded.schedule->graph.ops.size(), 1u);
  EXPECT_TRUE(loaded.program == loadFile(write("p2.mg", testing::kValidProgramText)).program);
}

TEST_F(MalformedInput, TheTableIsLargeAndNamesAreUnique) {
  const std::vector<testing::MalformedCase> cases = testing::malformedCases();
  EXPECT_GE(cases.size(), 30u);
  std::set<std::string> names;
  for (const testing::MalformedCase& c : cases) EXPECT_TRUE(names.insert(c.name).second) << c.name;
}

TEST_F(MalformedInput, EveryCaseIsAOneLineUserErrorWithItsLocationAndReason) {
  for (const testing::MalformedCase& c : testing::malformedCases()) {
    SCOPED_TRACE(c.name);
    const std::string path = write(c.fileName, c.contents);
    try {
      loadFile(path);
      ADD_FAILURE() << c.name << ": loaded without an error";
    } catch (const UserError& e) {
      EXPECT_THAT(e.where(), StartsWith(path)) << e.what();
      EXPECT_THAT(e.where(), HasSubstr(c.whereSubstring)) << e.what();
      EXPECT_THAT(e.reason(), HasSubstr(c.reasonSubstring)) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << c.name << ": not a UserError: " << e.what();
    }
  }
}

TEST_F(MalformedInput, EveryTruncationOfAScheduleIsAUserError) {
  const std::string& text = testing::kValidScheduleJson;
  for (size_t length = 0; length < text.size(); length += 7) {
    const std::string path = write("cut.json", text.substr(0, length));
    EXPECT_THROW(loadFile(path), UserError) << length;
  }
}

// Token-level mutations (numbers, names, deleted characters) of valid files must either load
// or fail as a UserError: never a crash, an assert or another exception type.
std::string mutate(const std::string& text, std::mt19937_64& rng) {
  // Numbers and quoted strings, found by hand: std::regex is too slow for thousands of files.
  std::vector<std::pair<size_t, size_t>> tokens;
  for (size_t i = 0; i < text.size();) {
    size_t end = i;
    if (text[i] == '"') {
      end = text.find('"', i + 1);
      end = end == std::string::npos ? text.size() : end + 1;
    } else if (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '-') {
      ++end;
      while (end < text.size() &&
             (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '.')) {
        ++end;
      }
    }
    if (end > i) tokens.emplace_back(i, end - i);
    i = std::max(end, i + 1);
  }
  auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  const auto [at, length] = tokens[pick(tokens.size())];
  const std::string token = text.substr(at, length);
  std::string replacement;
  if (pick(5) == 0) {
    replacement = "";
  } else if (token[0] == '"') {
    const auto [other, otherLength] = tokens[pick(tokens.size())];
    replacement = text.substr(other, otherLength);
  } else {
    static const char* const kNumbers[] = {"-1", "0",  "1",   "2",           "3", "4",
                                           "7",  "64", "2.5", "99999999999", "-7"};
    replacement = kNumbers[pick(std::size(kNumbers))];
  }
  return text.substr(0, at) + replacement + text.substr(at + length);
}

TEST_F(MalformedInput, MutatedFilesLoadOrFailAsUserErrors) {
  std::mt19937_64 rng(20240601);
  std::vector<std::pair<std::string, std::string>> bases = {{"s.json", testing::kValidScheduleJson},
                                                            {"p.json", testing::kValidProgramJson},
                                                            {"p.mg", testing::kValidProgramText}};
  for (uint64_t seed = 0; seed < 12; ++seed) {
    testing::RandomGraphs random(seed);
    const Schedule schedule = random.schedule();
    bases.emplace_back("r.json", scheduleToJson(schedule).dump(1));
    bases.emplace_back("r.mg", programToText(schedule.program));
  }
  int loaded = 0;
  int rejected = 0;
  for (int i = 0; i < 1500; ++i) {
    const auto& [name, base] = bases[i % bases.size()];
    std::string text = mutate(base, rng);
    if (i % 3 == 0) text = mutate(text, rng);
    const std::string path = write(name, text);
    try {
      loadFile(path);
      ++loaded;
    } catch (const UserError& e) {
      ++rejected;
      ASSERT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    } catch (const std::exception& e) {
      FAIL() << "mutation " << i << " threw a non-UserError: " << e.what() << "\n" << text;
    }
  }
  EXPECT_GT(rejected, 500);
  EXPECT_GT(loaded, 10);
}

}  // namespace
}  // namespace mugraph::graph
