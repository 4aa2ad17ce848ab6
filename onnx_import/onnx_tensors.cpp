// Reading ONNX tensors' values (see onnx_tensors.h).
#include "onnx_import/onnx_tensors.h"

#include <onnx/onnx_pb.h>

#include <cctype>
#include <cstring>

#include "runtime/half_bits.h"

namespace mugraph::onnx_import {
namespace {

// Constants larger than this are weights, not parameters of an op: they are never read.
constexpr int64_t kMaxReadConstant = 64;

// A 16-bit float's value (exact in a double) from its bits.
double sixteenBitValue(uint16_t bits, bool half) {
  return half ? runtime::halfBitsToFloat(bits) : runtime::bfloat16BitsToFloat(bits);
}

template <class T>
std::vector<double> rawValues(const std::string& raw, int64_t count) {
  std::vector<double> values;
  if (raw.size() != static_cast<size_t>(count) * sizeof(T)) return values;
  for (int64_t i = 0; i < count; ++i) {
    T v;
    std::memcpy(&v, raw.data() + i * sizeof(T), sizeof(T));
    values.push_back(static_cast<double>(v));
  }
  return values;
}

}  // namespace

std::optional<graph::DType> floatDtype(int32_t elemType) {
  switch (elemType) {
    case onnx::TensorProto_DataType_FLOAT16:
      return graph::DType::F16;
    case onnx::TensorProto_DataType_BFLOAT16:
      return graph::DType::BF16;
    case onnx::TensorProto_DataType_FLOAT:
      return graph::DType::F32;
    default:
      return std::nullopt;
  }
}

std::string elemTypeName(int32_t elemType) {
  if (!onnx::TensorProto_DataType_IsValid(elemType)) return "type " + std::to_string(elemType);
  std::string name = onnx::TensorProto_DataType_Name(elemType);
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

namespace {

// The values of a tensor of at most `maxCount` elements stored in the file.
std::optional<Constant> readValues(const onnx::TensorProto& t, int64_t maxCount) {
  Constant c;
  for (int64_t d : t.dims()) c.shape.push_back(d);
  const std::optional<int64_t> checkedCount = graph::checkedElementCount(c.shape);
  if (!checkedCount) return std::nullopt;
  const int64_t count = *checkedCount;
  if (count > maxCount || t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) {
    return std::nullopt;
  }
  const std::string& raw = t.raw_data();
  switch (t.data_type()) {
    case onnx::TensorProto_DataType_BOOL:  // a byte each in raw data, else in int32_data
      if (t.has_raw_data()) {
        if (raw.size() != static_cast<size_t>(count)) return std::nullopt;
        for (char b : raw) c.values.push_back(b != 0 ? 1.0 : 0.0);
      } else {
        for (int32_t v : t.int32_data()) c.values.push_back(v != 0 ? 1.0 : 0.0);
      }
      break;
    case onnx::TensorProto_DataType_FLOAT:
      c.values = t.has_raw_data()
                     ? rawValues<float>(raw, count)
                     : std::vector<double>(t.float_data().begin(), t.float_data().end());
      break;
    case onnx::TensorProto_DataType_DOUBLE:
      c.values = t.has_raw_data()
                     ? rawValues<double>(raw, count)
                     : std::vector<double>(t.double_data().begin(), t.double_data().end());
      break;
    case onnx::TensorProto_DataType_INT64:
      c.values = t.has_raw_data()
                     ? rawValues<int64_t>(raw, count)
                     : std::vector<double>(t.int64_data().begin(), t.int64_data().end());
      break;
    case onnx::TensorProto_DataType_INT32:
      c.values = t.has_raw_data()
                     ? rawValues<int32_t>(raw, count)
                     : std::vector<double>(t.int32_data().begin(), t.int32_data().end());
      break;
    case onnx::TensorProto_DataType_FLOAT16:
    case onnx::TensorProto_DataType_BFLOAT16: {
      // Without raw data, 16-bit floats sit in int32_data, one per element.
      std::vector<uint16_t> bits;
      if (t.has_raw_data()) {
        if (raw.size() != static_cast<size_t>(count) * 2) return std::nullopt;
        bits.resize(count);
        std::memcpy(bits.data(), raw.data(), raw.size());
      } else {
        for (int32_t v : t.int32_data()) bits.push_back(static_cast<uint16_t>(v));
      }
      const bool half = t.data_type() == onnx::TensorProto_DataType_FLOAT16;
      for (uint16_t b : bits) c.values.push_back(sixteenBitValue(b, half));
      break;
    }
    default:
      return std::nullopt;
  }
  if (static_cast<int64_t>(c.values.size()) != count) return std::nullopt;
  return c;
}

}  // namespace

std::optional<Constant> readConstant(const onnx::TensorProto& t) {
  return readValues(t, kMaxReadConstant);
}

std::optional<Constant> readMaskOperand(const onnx::TensorProto& t, int64_t maxCount) {
  switch (t.data_type()) {
    case onnx::TensorProto_DataType_BOOL:
    case onnx::TensorProto_DataType_INT64:
    case onnx::TensorProto_DataType_INT32:
      return readValues(t, maxCount);
    default:
      return std::nullopt;
  }
}

std::optional<std::function<double(int64_t)>> floatElements(const onnx::TensorProto& t,
                                                            int64_t count) {
  if (t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) return std::nullopt;
  const std::string* raw = &t.raw_data();
  auto rawOf = [&](size_t bytes) {
    return t.has_raw_data() && raw->size() == static_cast<size_t>(count) * bytes;
  };
  switch (t.data_type()) {
    case onnx::TensorProto_DataType_FLOAT:
      if (rawOf(4)) {
        return [raw](int64_t i) {
          float v;
          std::memcpy(&v, raw->data() + i * 4, 4);
          return double{v};
        };
      }
      if (t.float_data_size() != count) return std::nullopt;
      return [&t](int64_t i) { return double{t.float_data(static_cast<int>(i))}; };
    case onnx::TensorProto_DataType_FLOAT16:
    case onnx::TensorProto_DataType_BFLOAT16: {
      const bool half = t.data_type() == onnx::TensorProto_DataType_FLOAT16;
      auto convert = [half](uint16_t b) { return sixteenBitValue(b, half); };
      if (rawOf(2)) {
        return [raw, convert](int64_t i) {
          uint16_t b;
          std::memcpy(&b, raw->data() + i * 2, 2);
          return convert(b);
        };
      }
      if (t.int32_data_size() != count) return std::nullopt;
      return [&t, convert](int64_t i) {
        return convert(static_cast<uint16_t>(t.int32_data(static_cast<int>(i))));
      };
    }
    default:
      return std::nullopt;
  }
}

}  // namespace mugraph::onnx_import
