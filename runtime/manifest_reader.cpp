#include "runtime/manifest_reader.h"

#include <nlohmann/json.hpp>

#include "graph/dynamic_extents.h"
#include "graph/error.h"
#include "graph/files.h"
#include "graph/json_reader.h"

namespace mugraph::runtime {
namespace {

using nlohmann::json;

// Typed access that turns every problem into a UserError with the JSON path.
class Reader {
 public:
  Reader(const json& value, std::string file, std::string path)
      : value_(value), file_(std::move(file)), path_(std::move(path)) {}
  Reader at(const std::string& key) const {
    if (!value_.is_object() || !value_.contains(key)) fail("missing key '" + key + "'");
    return Reader(value_.at(key), file_, path_ + "." + key);
  }
  Reader at(size_t i) const {
    return Reader(value_.at(i), file_, path_ + "[" + std::to_string(i) + "]");
  }
  bool has(const std::string& key) const { return value_.is_object() && value_.contains(key); }
  size_t size() const {
    if (!value_.is_array()) fail("expected an array");
    return value_.size();
  }
  std::string string() const {
    if (!value_.is_string()) fail("expected a string");
    return value_.get<std::string>();
  }
  int64_t integer(int64_t minimum = 0) const {
    if (!value_.is_number_integer()) fail("expected an integer");
    const int64_t v = value_.get<int64_t>();
    if (v < minimum) fail("must be at least " + std::to_string(minimum));
    return v;
  }
  bool boolean() const {
    if (!value_.is_boolean()) fail("expected true or false");
    return value_.get<bool>();
  }
  const json& raw() const { return value_; }
  [[noreturn]] void fail(const std::string& reason) const {
    throw UserError(file_ + ": " + path_, reason);
  }

 private:
  const json& value_;
  std::string file_;
  std::string path_;
};

std::array<unsigned, 3> dim3(const Reader& r) {
  if (r.size() != 3) r.fail("expected 3 numbers");
  return {static_cast<unsigned>(r.at(0).integer(1)), static_cast<unsigned>(r.at(1).integer(1)),
          static_cast<unsigned>(r.at(2).integer(1))};
}

// A grid of counts (an integer or {"ceil_div": [dim, tile]} each) at the lengths `dims`.
std::array<unsigned, 3> gridAt(const Reader& r, const graph::DimValues& dims,
                               const std::string& file) {
  if (r.size() != 3) r.fail("expected 3 counts");
  std::array<unsigned, 3> grid{};
  for (size_t a = 0; a < 3; ++a) {
    const int64_t count = graph::evaluateLaunchCountJson(
        r.at(a).raw(), dims, file + ": $.grid[" + std::to_string(a) + "]");
    if (count < 1 || count > 0x7fffffff) r.at(a).fail("is " + std::to_string(count));
    grid[a] = static_cast<unsigned>(count);
  }
  return grid;
}

// The lengths to read a manifest at: one per dim of its "dims", inside the range; none for a
// manifest without.
graph::DimValues lengthsFor(const Reader& top, const graph::DimValues& given) {
  graph::DimValues values;
  if (!top.has("dims")) {
    if (!given.empty()) {
      top.fail("has no dynamic dims, but lengths were given (" + graph::dimValuesText(given) + ")");
    }
    return values;
  }
  const Reader dims = top.at("dims");
  std::string names;
  for (size_t i = 0; i < dims.size(); ++i) {
    const std::string name = dims.at(i).at("name").string();
    const int64_t min = dims.at(i).at("min").integer(1);
    const int64_t max = dims.at(i).at("max").integer(min);
    names += (names.empty() ? "" : ", ") + name + " in [" + std::to_string(min) + ", " +
             std::to_string(max) + "]";
    const auto it = given.find(name);
    if (it == given.end()) {
      dims.at(i).fail("kernels take the length of '" + name + "': give one (--dim " + name +
                      "=N, N in [" + std::to_string(min) + ", " + std::to_string(max) + "])");
    }
    if (it->second < min || it->second > max) {
      dims.at(i).fail(name + "=" + std::to_string(it->second) + " is outside [" +
                      std::to_string(min) + ", " + std::to_string(max) + "]");
    }
    values[name] = it->second;
  }
  for (const auto& [name, value] : given) {
    if (!values.count(name)) dims.fail("has no dim '" + name + "' (it has " + names + ")");
  }
  return values;
}

// A tensor map parameter: every field checked against the limits of the copy engine that
// matter before the driver sees it.
ManifestTensorMap readTensorMap(const Reader& r, const std::string& tensor,
                                const graph::DimValues& lengths, const std::string& file) {
  ManifestTensorMap map;
  map.tensor = tensor;
  const auto dtype = graph::parseDType(r.at("dtype").string());
  if (!dtype) r.at("dtype").fail("unknown dtype");
  map.dtype = *dtype;
  map.rank = static_cast<int>(r.at("rank").integer(1));
  if (map.rank > 5) r.at("rank").fail("a tensor map has at most 5 dims");
  const Reader dims = r.at("dims");
  const Reader strides = r.at("strides_bytes");
  const Reader box = r.at("box");
  if (dims.size() != static_cast<size_t>(map.rank)) dims.fail("expected rank entries");
  if (strides.size() != static_cast<size_t>(map.rank - 1))
    strides.fail("expected rank - 1 entries");
  if (box.size() != static_cast<size_t>(map.rank)) box.fail("expected rank entries");
  for (int i = 0; i < map.rank; ++i) {
    const Reader dim = dims.at(i);
    map.dims[i] = static_cast<uint64_t>(
        dim.raw().is_array()
            ? graph::evaluateDimProductJson(dim.raw(), lengths, file + ": tensor map dims")
            : dim.integer(1));
    const int64_t extent = box.at(i).integer(1);
    if (extent > 256) box.at(i).fail("a box dim is at most 256");
    map.box[i] = static_cast<uint32_t>(extent);
    if (i + 1 < map.rank) {
      const Reader strideAt = strides.at(i);
      const int64_t stride =
          strideAt.raw().is_array()
              ? graph::evaluateDimProductJson(strideAt.raw(), lengths,
                                              file + ": tensor map strides_bytes")
              : strideAt.integer(16);
      if (stride % 16 != 0) strideAt.fail("must be a multiple of 16");
      map.strideBytes[i] = static_cast<uint64_t>(stride);
    }
  }
  const std::string swizzle = r.at("swizzle").string();
  if (swizzle == "none") {
    map.swizzleBytes = 0;
  } else if (swizzle == "32B" || swizzle == "64B" || swizzle == "128B") {
    map.swizzleBytes = std::stoi(swizzle);
  } else {
    r.at("swizzle").fail("expected none, 32B, 64B or 128B");
  }
  return map;
}

}  // namespace

const ManifestTensor& Manifest::tensor(const std::string& name) const {
  for (const ManifestTensor& t : tensors) {
    if (t.name == name) return t;
  }
  throw UserError("manifest", "no tensor '" + name + "'");
}

Manifest readManifest(const std::string& path, const graph::DimValues& lengths) {
  return manifestAt(readManifestDocument(path), path, lengths);
}

nlohmann::json readManifestDocument(const std::string& path) {
  return graph::parseJsonText(graph::readFileText(path), path);
}

std::vector<graph::DynamicDim> manifestDims(const nlohmann::json& document,
                                            const std::string& path) {
  std::vector<graph::DynamicDim> dims;
  const Reader top(document, path, "$");
  if (!top.has("dims")) return dims;
  const Reader list = top.at("dims");
  for (size_t i = 0; i < list.size(); ++i) {
    const int64_t min = list.at(i).at("min").integer(1);
    dims.push_back({list.at(i).at("name").string(), min, list.at(i).at("max").integer(min)});
  }
  return dims;
}

Manifest manifestAt(const nlohmann::json& document, const std::string& path,
                    const graph::DimValues& lengths) {
  const Reader top(document, path, "$");
  if (top.at("format").string() != "mugraph.manifest") top.at("format").fail("not a manifest");
  if (top.at("version").integer() != 1) top.at("version").fail("unsupported manifest version");
  Manifest m;
  m.dims = lengthsFor(top, lengths);
  m.schedule = top.at("schedule").string();
  m.scheduleHash = top.at("schedule_hash").string();
  const Reader ptx = top.at("ptx");
  if (!ptx.raw().is_object()) ptx.fail("expected an object of arch -> file");
  for (const auto& [arch, file] : ptx.raw().items()) m.ptx[arch] = ptx.at(arch).string();
  const Reader tensors = top.at("tensors");
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Reader t = tensors.at(i);
    ManifestTensor tensor;
    tensor.name = t.at("name").string();
    tensor.role = t.at("role").string();
    if (tensor.role != "input" && tensor.role != "output" && tensor.role != "workspace") {
      t.at("role").fail("unknown role '" + tensor.role + "'");
    }
    const auto dtype = graph::parseDType(t.at("dtype").string());
    if (!dtype) t.at("dtype").fail("unknown dtype");
    tensor.dtype = *dtype;
    const Reader shape = t.at("shape");
    for (size_t d = 0; d < shape.size(); ++d) {
      const Reader extent = shape.at(d);
      if (extent.raw().is_string()) {
        tensor.shapeDims.resize(shape.size());
        tensor.shapeDims[d] = extent.string();
      }
      tensor.shape.push_back(
          extent.raw().is_string()
              ? graph::evaluateDimProductJson(json::array({extent.raw()}), m.dims,
                                              path + ": $.tensors[" + std::to_string(i) + "].shape")
              : extent.integer(1));
    }
    if (t.has("layout")) {
      const auto layout = graph::parseLayout(t.at("layout").string());
      if (!layout) t.at("layout").fail("unknown layout");
      tensor.layout = *layout;
    }
    tensor.bytes = graph::evaluateDimProductJson(
        t.at("bytes").raw(), m.dims, path + ": $.tensors[" + std::to_string(i) + "].bytes");
    const std::optional<int64_t> count = graph::checkedElementCount(tensor.shape);
    int64_t bytes = 0;
    if (!count || __builtin_mul_overflow(*count, graph::dtypeBytes(tensor.dtype), &bytes)) {
      shape.fail("holds more bytes than fit in 64 bits");
    }
    if (tensor.bytes != bytes) t.at("bytes").fail("does not match the shape and dtype");
    if (tensor.role == "workspace") tensor.offset = t.at("offset").integer();
    m.tensors.push_back(std::move(tensor));
  }
  m.workspaceBytes = top.at("workspace_bytes").integer();
  for (const ManifestTensor& t : m.tensors) {
    int64_t end = 0;
    if (t.role == "workspace" &&
        (__builtin_add_overflow(t.offset, t.bytes, &end) || end > m.workspaceBytes)) {
      top.at("workspace_bytes").fail("workspace tensor '" + t.name + "' does not fit");
    }
  }
  if (top.has("waits_for_prior_grids")) {
    m.waitsForPriorGrids = top.at("waits_for_prior_grids").boolean();
  }
  const Reader kernels = top.at("kernels");
  for (size_t i = 0; i < kernels.size(); ++i) {
    const Reader k = kernels.at(i);
    ManifestKernel kernel;
    kernel.entry = k.at("entry").string();
    kernel.grid = m.dims.empty() ? dim3(k.at("grid")) : gridAt(k.at("grid"), m.dims, path);
    kernel.block = dim3(k.at("block"));
    kernel.dynamicSharedBytes = static_cast<unsigned>(k.at("dynamic_shared_bytes").integer());
    const Reader params = k.at("params");
    for (size_t p = 0; p < params.size(); ++p) {
      if (params.at(p).has("kind") && params.at(p).at("kind").string() == "dim") {
        const std::string dim = params.at(p).at("dim").string();
        if (!m.dims.count(dim)) params.at(p).at("dim").fail("names no dim of $.dims");
        kernel.dimArguments.push_back(static_cast<int32_t>(m.dims.at(dim)));
        continue;
      }
      if (!kernel.dimArguments.empty()) params.at(p).fail("a parameter after a dim");
      const Reader param = params.at(p).at("tensor");
      const std::string name = param.string();
      bool known = false;
      for (const ManifestTensor& t : m.tensors) known = known || t.name == name;
      if (!known) param.fail("names no tensor of the manifest");
      const std::string kind =
          params.at(p).has("kind") ? params.at(p).at("kind").string() : "pointer";
      if (kind == "pointer") {
        if (!kernel.tensorMaps.empty()) {
          params.at(p).fail("a pointer parameter after a tensor map");
        }
        kernel.params.push_back(name);
      } else if (kind == "tensor_map") {
        kernel.tensorMaps.push_back(readTensorMap(params.at(p), name, m.dims, path));
      } else {
        params.at(p).at("kind").fail("is none of \"pointer\", \"tensor_map\" and \"dim\"");
      }
    }
    m.kernels.push_back(std::move(kernel));
  }
  return m;
}

}  // namespace mugraph::runtime
