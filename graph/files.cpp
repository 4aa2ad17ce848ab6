// Program and schedule files: what a path holds is decided by its extension (.mg text) or by
// the JSON "format" field, and writes are atomic (a temp file in the same folder, fsync,
// rename) so that a crash or a concurrent reader never sees half a file.
#include "graph/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <stdexcept>
#include <utility>

#include "graph/error.h"
#include "graph/json_format.h"
#include "graph/json_reader.h"
#include "graph/program_text.h"
#include "graph/validate.h"

namespace mugraph::graph {
namespace {

bool isProgramTextPath(const std::string& path) {
  return path.size() >= 3 && path.compare(path.size() - 3, 3, ".mg") == 0;
}

std::string folderOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string systemError() {
  return std::strerror(errno);
}

// Closes a file descriptor on every path out of a scope.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

void writeAll(int fd, std::string_view contents) {
  while (!contents.empty()) {
    const ssize_t n = ::write(fd, contents.data(), contents.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error(systemError());
    contents.remove_prefix(static_cast<size_t>(n));
  }
}

// Key order for written files: identity first, then the interface, then the body.
int keyRank(const std::string& key) {
  static const char* const kOrder[] = {
      "format", "version",  "op",     "name", "dtype",   "shape",   "layout",  "from",
      "inputs", "outputs",  "output", "to",   "grid",    "cluster", "threads", "occupancy", "forloop", "imap",
      "omap",   "fmap",     "dim",    "c",    "program", "tensors", "kernels", "ops",
      "fusion", "producer", "fused",  "x",    "y",       "z",       "hash"};
  for (size_t i = 0; i < std::size(kOrder); ++i) {
    if (key == kOrder[i]) return static_cast<int>(i);
  }
  return static_cast<int>(std::size(kOrder));
}

std::vector<std::string> orderedKeys(const nlohmann::json& object) {
  std::vector<std::string> keys;
  for (const auto& item : object.items()) keys.push_back(item.key());
  std::stable_sort(keys.begin(), keys.end(), [](const std::string& a, const std::string& b) {
    return keyRank(a) < keyRank(b);
  });
  return keys;
}

std::string oneLine(const nlohmann::json& value) {
  if (!value.is_structured()) return value.dump();
  std::string text = value.is_array() ? "[" : "{";
  bool first = true;
  if (value.is_array()) {
    for (const nlohmann::json& item : value) {
      text += (first ? "" : ", ") + oneLine(item);
      first = false;
    }
    return text + "]";
  }
  for (const std::string& key : orderedKeys(value)) {
    text += (first ? "" : ", ") + nlohmann::json(key).dump() + ": " + oneLine(value[key]);
    first = false;
  }
  return text + "}";
}

// Pretty JSON that keeps whatever fits in 100 columns on one line (shapes, tensors, block
// ops), so saved schedules read like the format's documentation and diff line by line.
// `column` is where the value starts on its line, `indent` the indentation of that line.
void appendPretty(const nlohmann::json& value, size_t indent, size_t column, std::string& out) {
  constexpr size_t kWidth = 100;
  const std::string flat = oneLine(value);
  if (!value.is_structured() || value.empty() || column + flat.size() <= kWidth) {
    out += flat;
    return;
  }
  const std::string pad(indent + 2, ' ');
  out += value.is_array() ? "[\n" : "{\n";
  bool first = true;
  if (value.is_array()) {
    for (const nlohmann::json& item : value) {
      out += (first ? "" : ",\n") + pad;
      appendPretty(item, indent + 2, indent + 2, out);
      first = false;
    }
  } else {
    for (const std::string& key : orderedKeys(value)) {
      const std::string label = nlohmann::json(key).dump() + ": ";
      out += (first ? "" : ",\n") + pad + label;
      appendPretty(value[key], indent + 2, indent + 2 + label.size(), out);
      first = false;
    }
  }
  out += "\n" + std::string(indent, ' ') + (value.is_array() ? "]" : "}");
}

std::string formatJson(const nlohmann::json& value) {
  std::string out;
  appendPretty(value, 0, 0, out);
  return out + "\n";
}

}  // namespace

std::string readFileText(const std::string& path) {
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) throw UserError(path, "cannot read the file: " + systemError());
  struct stat info;
  if (::fstat(fd.get(), &info) == 0 && S_ISDIR(info.st_mode)) {
    throw UserError(path, "cannot read the file: it is a folder");
  }
  std::string text;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw UserError(path, "cannot read the file: " + systemError());
    if (n == 0) return text;
    text.append(buffer, static_cast<size_t>(n));
  }
}

void writeFileAtomic(const std::string& path, std::string_view contents) {
  static std::atomic<unsigned> counter{0};
  const std::string folder = folderOf(path);
  const std::string base =
      path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1);
  const std::string temp =
      folder + "/." + base + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  FileDescriptor fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666));
  if (fd.get() < 0) {
    throw UserError(path, "cannot write the file: cannot create a temp file in folder '" + folder +
                              "': " + systemError());
  }
  try {
    struct stat existing;
    if (::stat(path.c_str(), &existing) == 0 && S_ISREG(existing.st_mode)) {
      ::fchmod(fd.get(), existing.st_mode & 07777);  // an overwrite keeps the file's mode
    }
    writeAll(fd.get(), contents);
    if (::fsync(fd.get()) != 0) throw std::runtime_error(systemError());
    if (::close(fd.release()) != 0) throw std::runtime_error(systemError());
    if (::rename(temp.c_str(), path.c_str()) != 0) throw std::runtime_error(systemError());
  } catch (const std::runtime_error& e) {
    ::unlink(temp.c_str());
    throw UserError(path, std::string("cannot write the file: ") + e.what());
  }
  // Make the rename itself durable; failing here loses nothing a reader could see.
  FileDescriptor dir(::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() >= 0) ::fsync(dir.get());
}

LoadedFile loadFile(const std::string& path) {
  const std::string text = readFileText(path);
  LoadedFile loaded;
  if (isProgramTextPath(path)) {
    loaded.program = parseProgramText(text, path);
    return loaded;
  }
  const nlohmann::json json = parseJsonText(text, path);
  const JsonReader top(json, path, "$");
  if (!json.is_object()) top.fail("expected a JSON object with a \"format\" field");
  const JsonReader format = top.at("format");
  const std::string name = format.string();
  try {
    if (name == kProgramFormat) {
      loaded.program = programFromJson(json, path);
    } else if (name == kScheduleFormat) {
      loaded.schedule = scheduleFromJson(json, path);
      loaded.program = loaded.schedule->program;
    } else {
      format.fail("unknown format '" + name + "' (expected '" + kProgramFormat + "' or '" +
                  kScheduleFormat + "')");
    }
  } catch (const nlohmann::json::exception& e) {
    // The readers check every value before using it; this is a last line of defence.
    throw UserError(path, std::string("malformed JSON value: ") + e.what());
  }
  return loaded;
}

Program loadProgram(const std::string& path) {
  return loadFile(path).program;
}

Schedule loadSchedule(const std::string& path) {
  LoadedFile loaded = loadFile(path);
  if (!loaded.schedule) {
    throw UserError(path, std::string("this is a program, not a schedule (a schedule is JSON with "
                                      "\"format\": \"") +
                              kScheduleFormat + "\")");
  }
  return std::move(*loaded.schedule);
}

void saveProgram(const std::string& path, const Program& program) {
  try {
    validateProgram(program);
  } catch (const IrError& e) {
    throw UserError(path, std::string("refusing to save an invalid program: ") + e.what());
  }
  if (isProgramTextPath(path)) {
    std::string text;
    try {
      text = programToText(program);
    } catch (const std::invalid_argument& e) {
      // A program read from JSON may name a tensor in a way .mg text cannot spell.
      throw UserError(path, std::string("cannot be written as .mg text: ") + e.what());
    }
    writeFileAtomic(path, text);
    return;
  }
  writeFileAtomic(path, formatJson(programToJson(program)));
}

void saveSchedule(const std::string& path, const Schedule& schedule) {
  try {
    validateSchedule(schedule);
  } catch (const IrError& e) {
    throw UserError(path, std::string("refusing to save an invalid schedule: ") + e.what());
  }
  writeFileAtomic(path, formatJson(scheduleToJson(schedule)));
}

}  // namespace mugraph::graph
