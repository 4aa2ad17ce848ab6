#include "distributed/folder_bytes.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace mugraph::distributed {

namespace fs = std::filesystem;

// Each file as "<relative path>\n<size>\n<bytes>", in path order (the same bytes for the same
// folder).
std::string packFolder(const std::string& dir) {
  std::vector<fs::path> files;
  for (const fs::directory_entry& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  std::string packed;
  for (const fs::path& file : files) {
    std::ifstream in(file, std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    if (!in) throw std::runtime_error("cannot read " + file.string());
    const std::string contents = bytes.str();
    packed += fs::relative(file, dir).string() + "\n" + std::to_string(contents.size()) + "\n";
    packed += contents;
  }
  return packed;
}

void unpackFolder(const std::string& packed, const std::string& dir) {
  fs::create_directories(dir);
  size_t at = 0;
  const auto line = [&] {
    const size_t end = packed.find('\n', at);
    if (end == std::string::npos) throw std::runtime_error("a packed folder ends mid-header");
    std::string text = packed.substr(at, end - at);
    at = end + 1;
    return text;
  };
  while (at < packed.size()) {
    const fs::path relative = line();
    if (relative.empty() || relative.is_absolute() ||
        std::find(relative.begin(), relative.end(), "..") != relative.end()) {
      throw std::runtime_error("a packed folder names '" + relative.string() + "'");
    }
    const size_t size = std::stoull(line());
    if (size > packed.size() - at) throw std::runtime_error("a packed folder ends mid-file");
    const fs::path file = fs::path(dir) / relative;
    fs::create_directories(file.parent_path());
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(packed.data() + at, static_cast<std::streamsize>(size));
    if (!out) throw std::runtime_error("cannot write " + file.string());
    at += size;
  }
}

}  // namespace mugraph::distributed
