// The search sits on the plan, never on the code generator (DESIGN.md's layers): no file under
// search/ includes a codegen/ header, and its CMake target does not link codegen or NVRTC.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace mugraph::search {
namespace {

std::string readText(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(Layering, NoSearchFileIncludesACodegenHeader) {
  const std::filesystem::path dir = std::filesystem::path(MUGRAPH_SOURCE_DIR) / "search";
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string ext = entry.path().extension().string();
    if (ext != ".cpp" && ext != ".h") continue;
    ++files;
    EXPECT_EQ(readText(entry.path()).find("#include \"codegen/"), std::string::npos)
        << entry.path();
  }
  EXPECT_GE(files, 10);
}

TEST(Layering, TheSearchLibraryLinksNeitherCodegenNorNvrtc) {
  const std::string cmake =
      readText(std::filesystem::path(MUGRAPH_SOURCE_DIR) / "search" / "CMakeLists.txt");
  const size_t link = cmake.find("target_link_libraries(mugraph_search");
  ASSERT_NE(link, std::string::npos);
  const std::string libraries = cmake.substr(link, cmake.find(')', link) - link);
  EXPECT_NE(libraries.find("mugraph_plan"), std::string::npos) << libraries;
  EXPECT_EQ(libraries.find("codegen"), std::string::npos) << libraries;
  EXPECT_EQ(libraries.find("NVRTC"), std::string::npos) << libraries;
}

}  // namespace
}  // namespace mugraph::search
