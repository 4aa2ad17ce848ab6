// One plan, one number: for every shipped schedule (hand-written and search-found) and every
// target, the shared memory `mugraph show --arch` prints for each kernel is the
// dynamic_shared_bytes that `mugraph replay --arch` writes into the manifest.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>

#include "tools/run_cli.h"

namespace mugraph::testing {
namespace {

std::vector<std::string> shippedSchedules() {
  std::vector<std::string> paths;
  for (const char* folder : {"/schedules", "/schedules/found"}) {
    const std::filesystem::path dir = std::string(MUGRAPH_SOURCE_DIR) + folder;
    if (!std::filesystem::exists(dir)) continue;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (entry.path().extension() == ".json") paths.push_back(entry.path().string());
    }
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

// Each kernel's line ("kernel 0: name  grid (...) ..., shared memory 12345 B on sm_90"), or
// for a predefined op the line of its default schedule, in kernel order -> the bytes.
std::vector<int64_t> shownSharedBytes(const std::string& text) {
  static const std::regex line(R"(shared memory (\d+) B on sm_\d+)");
  std::vector<int64_t> bytes;
  for (std::sregex_iterator it(text.begin(), text.end(), line), end; it != end; ++it) {
    bytes.push_back(std::stoll((*it)[1]));
  }
  return bytes;
}

TEST(ShowMatchesManifest, SharedBytesOfEveryKernelOfEveryShippedScheduleOnEveryTarget) {
  const auto scratch = std::filesystem::temp_directory_path() /
                       ("mugraph_show_manifest_" + std::to_string(::getpid()));
  std::filesystem::create_directories(scratch);
  const std::vector<std::string> schedules = shippedSchedules();
  ASSERT_GE(schedules.size(), 4u);
  for (const std::string& path : schedules) {
    for (const char* arch : {"sm_80", "sm_90"}) {
      SCOPED_TRACE(path + " on " + arch);
      const CliResult shown = runMugraph("show " + path + " --arch " + arch, scratch.string());
      ASSERT_EQ(shown.exitCode, 0) << shown.err;
      const std::string out = (scratch / "replayed").string();
      std::filesystem::remove_all(out);
      const CliResult replayed =
          runMugraph("replay " + path + " --arch " + arch + " --out " + out, scratch.string());
      // A schedule found for sm_90 may not fit an sm_80 block: replay refuses it naming the
      // bytes, and show printed the same number.
      static const std::regex tooLarge(R"(needs (\d+) bytes of shared memory)");
      std::smatch needs;
      if (replayed.exitCode == 2 && std::regex_search(replayed.err, needs, tooLarge)) {
        const std::vector<int64_t> shownBytes = shownSharedBytes(shown.out);
        EXPECT_NE(std::find(shownBytes.begin(), shownBytes.end(), std::stoll(needs[1])),
                  shownBytes.end())
            << shown.out << replayed.err;
        continue;
      }
      // Clusters are an sm_90 feature: replay refuses them on sm_80, and show listed them.
      if (replayed.exitCode == 2 && replayed.err.find("has clusters of") != std::string::npos) {
        EXPECT_NE(shown.out.find("in clusters of"), std::string::npos) << shown.out;
        continue;
      }
      ASSERT_EQ(replayed.exitCode, 0) << replayed.err;
      const nlohmann::json manifest = nlohmann::json::parse(readWholeFile(out + "/manifest.json"));
      std::vector<int64_t> planned;
      for (const nlohmann::json& kernel : manifest.at("kernels")) {
        planned.push_back(kernel.at("dynamic_shared_bytes").get<int64_t>());
      }
      EXPECT_FALSE(planned.empty());
      EXPECT_EQ(shownSharedBytes(shown.out), planned) << shown.out;
    }
  }
  std::filesystem::remove_all(scratch);
}

}  // namespace
}  // namespace mugraph::testing
