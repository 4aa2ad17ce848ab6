// The checked JSON accessors behind the program and schedule readers, and the mapping from
// parser offsets and IR locations to the positions a user can find in the file.
#include "graph/json_reader.h"

#include <algorithm>
#include <cmath>

#include "graph/dynamic_dims.h"
#include "graph/error.h"
#include "graph/hash.h"
#include "graph/json_format.h"
#include "graph/syntax.h"

namespace mugraph::graph {
namespace {

using nlohmann::json;

std::string typeName(const json& value) {
  if (value.is_number_integer()) return "an integer";
  if (value.is_number_float()) return "a floating-point number";
  if (value.is_string()) return "a string";
  if (value.is_boolean()) return "a boolean";
  if (value.is_null()) return "null";
  if (value.is_array()) return "an array";
  return "an object";
}

// One line, whatever the input held.
std::string singleLine(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  return text;
}

}  // namespace

void JsonReader::fail(const std::string& reason) const {
  throw UserError(*source_ + ": " + path_, singleLine(reason));
}

std::string JsonReader::describe() const {
  std::string text = value_->dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return typeName(*value_) + " (" + text + ")";
}

void JsonReader::expectObject(const std::vector<std::string_view>& allowed) const {
  if (!value_->is_object()) fail("expected an object, got " + describe());
  for (const auto& [key, value] : value_->items()) {
    bool known = false;
    for (std::string_view a : allowed) known = known || a == key;
    if (!known) {
      std::string list;
      for (std::string_view a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      JsonReader(value, *source_, path_ + "." + key)
          .fail("unknown key '" + key + "' (expected one of: " + list + ")");
    }
  }
}

bool JsonReader::has(std::string_view key) const {
  return value_->is_object() && value_->find(key) != value_->end();
}

JsonReader JsonReader::at(std::string_view key) const {
  std::optional<JsonReader> member = find(key);
  if (!member) fail("missing key '" + std::string(key) + "'");
  return *member;
}

std::optional<JsonReader> JsonReader::find(std::string_view key) const {
  if (!value_->is_object()) fail("expected an object, got " + describe());
  auto it = value_->find(key);
  if (it == value_->end()) return std::nullopt;
  return JsonReader(*it, *source_, path_ + "." + std::string(key));
}

std::vector<JsonReader> JsonReader::items() const {
  if (!value_->is_array()) fail("expected an array, got " + describe());
  std::vector<JsonReader> result;
  for (size_t i = 0; i < value_->size(); ++i) {
    result.emplace_back((*value_)[i], *source_, path_ + "[" + std::to_string(i) + "]");
  }
  return result;
}

std::string JsonReader::string() const {
  if (!value_->is_string()) fail("expected a string, got " + describe());
  return value_->get_ref<const std::string&>();
}

bool JsonReader::boolean() const {
  if (!value_->is_boolean()) fail("expected true or false, got " + describe());
  return value_->get<bool>();
}

int64_t JsonReader::integer(int64_t min, int64_t max) const {
  const std::string range = max >= (int64_t{1} << 40)
                                ? " >= " + std::to_string(min)
                                : " in " + std::to_string(min) + ".." + std::to_string(max);
  if (!value_->is_number_integer()) fail("expected an integer" + range + ", got " + describe());
  if (value_->is_number_unsigned() && value_->get<uint64_t>() > static_cast<uint64_t>(max)) {
    fail("expected an integer" + range + ", got " + describe());
  }
  const int64_t v = value_->get<int64_t>();
  if (v < min || v > max) fail("expected an integer" + range + ", got " + std::to_string(v));
  return v;
}

double JsonReader::number() const {
  if (!value_->is_number()) fail("expected a number, got " + describe());
  const double v = value_->get<double>();
  if (!std::isfinite(v)) fail("expected a finite number, got " + describe());
  return v;
}

std::string JsonReader::tensorName() const {
  std::string name = string();
  if (!isTensorName(name)) {
    fail("'" + name + "' is not a valid name (letters, digits and '_', not starting with a digit)");
  }
  return name;
}

std::string JsonReader::graphName() const {
  std::string name = string();
  if (!isGraphName(name)) fail("'" + name + "' is not a valid name (letters, digits, '_.-')");
  return name;
}

void JsonReader::checkFormatAndVersion(const char* format, const char* what) const {
  if (!value_->is_object()) fail("expected a " + std::string(what) + " object, got " + describe());
  const std::string actual = at("format").string();
  if (actual != format) {
    at("format").fail("format is '" + actual + "' but a " + what + " ('" + format +
                      "') is expected");
  }
  if (!has("version")) {
    fail("missing key 'version' (this mugraph reads " + std::string(what) + " version " +
         std::to_string(kFormatVersion) + ")");
  }
  const JsonReader version = at("version");
  if (!version.value_->is_number_integer() || version.value_->get<int64_t>() != kFormatVersion) {
    version.fail("unsupported " + std::string(what) + " version " +
                 version.value_->dump(-1, ' ', false, json::error_handler_t::replace) +
                 "; this mugraph reads version " + std::to_string(kFormatVersion));
  }
}

void JsonReader::checkHash(uint64_t computed) const {
  std::optional<JsonReader> hash = find("hash");
  if (!hash) return;
  const std::string written = hash->string();
  if (written != hashHex(computed)) {
    hash->fail("hash mismatch: the file says " + written + " but its content hashes to " +
               hashHex(computed) + " (edited by hand? remove \"hash\" or update it)");
  }
}

OpKind readOpKind(const JsonReader& op, OpLevel level) {
  const JsonReader field = op.at("op");
  const std::string name = field.string();
  const std::optional<OpKind> kind = parseOpKind(name);
  if (!kind) field.fail("unknown op '" + name + "'");
  const bool allowed = level == OpLevel::Block ? opInfo(*kind).blockLevel
                       : level == OpLevel::Program
                           ? isPredefinedOp(*kind)
                           : isPredefinedOp(*kind) || *kind == OpKind::BlockGraph;
  if (!allowed) {
    const char* where = level == OpLevel::Block     ? "inside a block graph"
                        : level == OpLevel::Program ? "in a program (predefined ops only)"
                                                    : "as a kernel";
    field.fail("op '" + name + "' is not allowed " + where);
  }
  return *kind;
}

std::vector<std::string_view> attrKeys(OpKind kind) {
  const OpInfo& info = opInfo(kind);
  std::vector<std::string_view> keys;
  if (info.hasDim) keys.push_back("dim");
  if (info.hasTo) keys.push_back("to");
  if (info.hasScale) keys.push_back("c");
  if (info.hasQueries) keys.push_back("queries");
  return keys;
}

OpAttrs readAttrs(const JsonReader& op, OpKind kind) {
  const OpInfo& info = opInfo(kind);
  for (std::string_view key : {"dim", "to", "c", "queries"}) {
    const std::vector<std::string_view> allowed = attrKeys(kind);
    if (op.has(key) && std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      op.at(key).fail("op '" + std::string(info.name) + "' takes no attribute '" +
                      std::string(key) + "'");
    }
  }
  OpAttrs attrs;
  if (info.hasDim) attrs.dim = static_cast<int>(op.at("dim").integer(0, kMaxRank - 1));
  if (info.hasTo && op.has("to")) attrs.to = op.at("to").integer(1, int64_t{1} << 31);
  if (info.hasScale) attrs.scale = op.at("c").number();
  if (info.hasQueries && op.has("queries")) {
    attrs.queries = op.at("queries").integer(0, int64_t{1} << 31);
  }
  return attrs;
}

void writeAttrs(nlohmann::json& op, OpKind kind, const OpAttrs& attrs) {
  const OpInfo& info = opInfo(kind);
  if (info.hasDim) op["dim"] = attrs.dim;
  if (info.hasTo) op["to"] = attrs.to;
  if (info.hasScale) op["c"] = attrs.scale;
  if (info.hasQueries && attrs.queries > 0) op["queries"] = attrs.queries;
}

TensorDesc readTensorDesc(const JsonReader& desc, const std::vector<DynamicDim>& dims) {
  desc.expectObject({"name", "dtype", "shape", "layout"});
  TensorDesc result;
  result.name = desc.at("name").tensorName();
  const JsonReader dtype = desc.at("dtype");
  const std::optional<DType> parsedDType = parseDType(dtype.string());
  if (!parsedDType) dtype.fail("unknown dtype '" + dtype.string() + "' (f16, bf16 or f32)");
  result.dtype = *parsedDType;
  const JsonReader shape = desc.at("shape");
  const std::vector<JsonReader> shapeItems = shape.items();
  if (shapeItems.empty() || shapeItems.size() > static_cast<size_t>(kMaxRank)) {
    shape.fail("tensor '" + result.name + "' has rank " + std::to_string(shapeItems.size()) +
               " (1 to 4 supported)");
  }
  for (const JsonReader& d : shapeItems) {
    if (!d.value().is_string()) {
      result.shape.push_back(d.integer(1, kMaxDimSize));
      continue;
    }
    const std::string name = d.string();
    int found = kStaticDim;
    for (size_t i = 0; i < dims.size(); ++i) {
      if (dims[i].name == name) found = static_cast<int>(i);
    }
    if (found == kStaticDim) {
      d.fail("unknown dim '" + name + "' (declare it in \"dims\": [{\"name\": \"" + name +
             "\", \"min\": MIN, \"max\": MAX}])");
    }
    result.dynamicDims.resize(result.shape.size(), kStaticDim);
    result.dynamicDims.push_back(found);
    result.shape.push_back(dims[found].max);
  }
  if (!result.dynamicDims.empty()) result.dynamicDims.resize(result.shape.size(), kStaticDim);
  if (std::optional<JsonReader> layout = desc.find("layout")) {
    const std::optional<Layout> parsedLayout = parseLayout(layout->string());
    if (!parsedLayout) {
      layout->fail("unknown layout '" + layout->string() + "' (row_major or transposed)");
    }
    result.layout = *parsedLayout;
  }
  return result;
}

nlohmann::json tensorDescToJson(const TensorDesc& desc, const std::vector<DynamicDim>& dims) {
  json shape = desc.shape;
  for (size_t d = 0; d < desc.dynamicDims.size(); ++d) {
    if (desc.dynamicDims[d] != kStaticDim) shape[d] = dims.at(desc.dynamicDims[d]).name;
  }
  return json{{"name", desc.name},
              {"dtype", dtypeName(desc.dtype)},
              {"shape", std::move(shape)},
              {"layout", layoutName(desc.layout)}};
}

std::vector<DynamicDim> readDynamicDims(const JsonReader& list) {
  std::vector<DynamicDim> dims;
  for (const JsonReader& item : list.items()) {
    item.expectObject({"name", "min", "max"});
    DynamicDim dim;
    dim.name = item.at("name").string();
    dim.min = item.at("min").integer(-kMaxDimSize, kMaxDimSize);
    dim.max = item.at("max").integer(-kMaxDimSize, kMaxDimSize);
    if (auto problem = dimDeclarationProblem(dim.name, dim.min, dim.max, dims)) {
      item.at(problem->field).fail(problem->reason);
    }
    dims.push_back(std::move(dim));
  }
  return dims;
}

json dynamicDimsToJson(const std::vector<DynamicDim>& dims) {
  json list = json::array();
  for (const DynamicDim& d : dims)
    list.push_back(json{{"name", d.name}, {"min", d.min}, {"max", d.max}});
  return list;
}

nlohmann::json parseJsonText(std::string_view text, const std::string& source) {
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    // nlohmann reports the byte just past the problem; turn it into line:column.
    const size_t end = std::min<size_t>(e.byte == 0 ? 0 : e.byte - 1, text.size());
    size_t line = 1;
    size_t column = 1;
    for (size_t i = 0; i < end; ++i) {
      column = text[i] == '\n' ? 1 : column + 1;
      line += text[i] == '\n' ? 1 : 0;
    }
    std::string reason = e.what();
    const size_t detail = reason.find(": ");  // after "[json.exception...] parse error at ..."
    if (detail != std::string::npos) reason = reason.substr(detail + 2);
    throw UserError(source + ":" + std::to_string(line) + ":" + std::to_string(column),
                    singleLine("invalid JSON: " + reason));
  } catch (const json::exception& e) {
    // Not a syntax error but still unreadable, e.g. a number too large for a double.
    std::string reason = e.what();
    const size_t detail = reason.find("] ");
    if (detail != std::string::npos) reason = reason.substr(detail + 2);
    throw UserError(source, singleLine("invalid JSON: " + reason));
  }
}

std::string jsonPathOf(const std::string& root, const std::string& section,
                       const IrLocation& location) {
  std::string path = root;
  if (!section.empty()) path += "." + section;
  if (location.index >= 0) path += "[" + std::to_string(location.index) + "]";
  if (location.blockOp >= 0) path += ".ops[" + std::to_string(location.blockOp) + "]";
  if (!location.field.empty()) path += "." + location.field;
  return path;
}

}  // namespace mugraph::graph
