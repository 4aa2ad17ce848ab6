// A folder's files as one string and back: how a rank hands the folder it wrote for an item
// (a subgraph's variants, a class of a dataset) to rank 0, which alone writes under --out, so
// the ranks need no shared file system. Regular files only, by path relative to the folder.
#pragma once

#include <string>

namespace mugraph::distributed {

std::string packFolder(const std::string& dir);
// Writes the files of `packed` under `dir` (created). Throws std::runtime_error on bytes that
// packFolder did not write.
void unpackFolder(const std::string& packed, const std::string& dir);

}  // namespace mugraph::distributed
