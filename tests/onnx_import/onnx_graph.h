// Small ONNX models built in a test with libonnx's protobuf classes, written to a temporary
// file and imported: the op mapping's and the causal masks' tests share it.
#pragma once

#include <onnx/onnx_pb.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "onnx_import/import_model.h"

namespace mugraph::onnx_import {

class OnnxGraph {
 public:
  OnnxGraph() { model_.add_opset_import()->set_version(17); }
  void input(const std::string& name, std::vector<int64_t> dims,
             int type = onnx::TensorProto_DataType_FLOAT16) {
    describe(graph()->add_input(), name, dims, type);
  }
  // An input or output whose dims are sizes ("64") or symbolic names ("seq", ONNX dim_param).
  void symbolicInput(const std::string& name, const std::vector<std::string>& dims) {
    describeSymbolic(graph()->add_input(), name, dims);
  }
  void symbolicOutput(const std::string& name, const std::vector<std::string>& dims) {
    describeSymbolic(graph()->add_output(), name, dims);
  }
  void output(const std::string& name, std::vector<int64_t> dims,
              int type = onnx::TensorProto_DataType_FLOAT16) {
    describe(graph()->add_output(), name, dims, type);
  }
  void scalar(const std::string& name, float value) {
    onnx::TensorProto* t = graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto_DataType_FLOAT);
    t->add_float_data(value);
  }
  onnx::TensorProto* initializerFor(const std::string& name) {
    onnx::TensorProto* t = graph()->add_initializer();
    t->set_name(name);
    return t;
  }
  onnx::NodeProto* node(const std::string& op, std::vector<std::string> in,
                        const std::string& out) {
    onnx::NodeProto* n = graph()->add_node();
    n->set_op_type(op);
    n->set_name(op + "_" + out);
    for (const std::string& i : in) n->add_input(i);
    n->add_output(out);
    return n;
  }
  static void attr(onnx::NodeProto* n, const std::string& key, int64_t value) {
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name(key);
    a->set_type(onnx::AttributeProto_AttributeType_INT);
    a->set_i(value);
  }
  static void attr(onnx::NodeProto* n, const std::string& key, float value) {
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name(key);
    a->set_type(onnx::AttributeProto_AttributeType_FLOAT);
    a->set_f(value);
  }
  ImportedModel import(const std::string& name, const DimPins& pins = {},
                       const DimRanges& ranges = {}) {
    return importModel(write(name), pins, ranges);
  }
  std::string write(const std::string& name) {
    const std::filesystem::path dir = std::filesystem::temp_directory_path() / "mugraph_onnx_map";
    std::filesystem::create_directories(dir);
    const std::string path = (dir / (name + ".onnx")).string();
    std::ofstream(path, std::ios::binary) << model_.SerializeAsString();
    return path;
  }

 private:
  onnx::GraphProto* graph() { return model_.mutable_graph(); }
  static void describe(onnx::ValueInfoProto* v, const std::string& name,
                       const std::vector<int64_t>& dims, int type) {
    v->set_name(name);
    onnx::TypeProto_Tensor* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(type);
    for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
  }
  static void describeSymbolic(onnx::ValueInfoProto* v, const std::string& name,
                               const std::vector<std::string>& dims) {
    v->set_name(name);
    onnx::TypeProto_Tensor* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto_DataType_FLOAT16);
    for (const std::string& d : dims) {
      if (!d.empty() && std::isdigit(static_cast<unsigned char>(d[0]))) {
        t->mutable_shape()->add_dim()->set_dim_value(std::stoll(d));
      } else {
        t->mutable_shape()->add_dim()->set_dim_param(d);
      }
    }
  }
  onnx::ModelProto model_;
};

}  // namespace mugraph::onnx_import
