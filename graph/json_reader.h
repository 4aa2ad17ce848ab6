// A typed, path-aware view of one JSON value, shared by the program and schedule readers.
// Every accessor returns a checked C++ value or throws a UserError whose `where` is
// "source: $.json.path", so no nlohmann exception and no unchecked value reaches the IR.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graph/ir.h"

namespace mugraph::graph {

class JsonReader {
 public:
  JsonReader(const nlohmann::json& value, const std::string& source, std::string path)
      : value_(&value), source_(&source), path_(std::move(path)) {}

  const nlohmann::json& value() const { return *value_; }
  const std::string& path() const { return path_; }
  const std::string& source() const { return *source_; }
  [[noreturn]] void fail(const std::string& reason) const;

  // An object holding only `allowed` keys (an unknown key is an error at that key).
  void expectObject(const std::vector<std::string_view>& allowed) const;
  bool has(std::string_view key) const;
  JsonReader at(std::string_view key) const;  // a required member
  std::optional<JsonReader> find(std::string_view key) const;

  std::vector<JsonReader> items() const;  // the elements of an array
  std::string string() const;
  bool boolean() const;
  int64_t integer(int64_t min, int64_t max) const;
  double number() const;  // any finite JSON number
  std::string tensorName() const;
  std::string graphName() const;

  // Checks "format" and "version" of a top-level object; `what` is "program" or "schedule".
  void checkFormatAndVersion(const char* format, const char* what) const;
  // Checks an optional "hash" member against the hash of what was read.
  void checkHash(uint64_t computed) const;

 private:
  std::string describe() const;  // the value, shortened, for messages

  const nlohmann::json* value_;
  const std::string* source_;
  std::string path_;
};

// Op syntax shared by programs and schedules: {"op": NAME, "inputs": [...], "output": NAME,
// plus "dim"/"to"/"c" where the op takes them}.
enum class OpLevel { Program, Kernel, Block };
OpKind readOpKind(const JsonReader& op, OpLevel level);  // reads op.at("op")
std::vector<std::string_view> attrKeys(OpKind kind);     // "dim", "to", "c" as the op takes
OpAttrs readAttrs(const JsonReader& op, OpKind kind);    // dim= and c= are required
void writeAttrs(nlohmann::json& op, OpKind kind, const OpAttrs& attrs);

// {"name", "dtype", "shape", "layout"} (layout optional on read, always written). A shape
// entry may name one of `dims` (a dynamic dim, graph/dynamic_dims.h): "s".
TensorDesc readTensorDesc(const JsonReader& desc, const std::vector<DynamicDim>& dims = {});
nlohmann::json tensorDescToJson(const TensorDesc& desc, const std::vector<DynamicDim>& dims = {});

// "dims": [{"name": "s", "min": 1, "max": 65536}, ...]; written only where there are some.
std::vector<DynamicDim> readDynamicDims(const JsonReader& list);
nlohmann::json dynamicDimsToJson(const std::vector<DynamicDim>& dims);

// Parses JSON text; a syntax error becomes a UserError naming the source, line and column.
nlohmann::json parseJsonText(std::string_view text, const std::string& source);

// "$.kernels[0].ops[3].imap.x" for an IrLocation; `root` replaces "$" (e.g. "$.program"),
// and `section` should already have any "program." prefix removed.
std::string jsonPathOf(const std::string& root, const std::string& section,
                       const IrLocation& location);

}  // namespace mugraph::graph
