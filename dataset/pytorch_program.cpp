#include "dataset/pytorch_program.h"

#include <set>
#include <sstream>

#include "codegen/kernel_abi.h"
#include "graph/error.h"

namespace mugraph::dataset {
namespace {

// A tensor name as a Python identifier that cannot clash with a keyword or the module's
// own names.
std::string pythonName(const std::string& name) {
  static const std::set<std::string> reserved = {
      "and",    "as",     "def",   "del",      "for",     "if",    "in",     "is",
      "lambda", "not",    "or",    "return",   "self",    "torch", "with",   "class",
      "from",   "import", "pass",  "while",    "None",    "True",  "False",  "global",
      "try",    "yield",  "break", "continue", "else",    "elif",  "except", "finally",
      "raise",  "assert", "async", "await",    "nonlocal"};
  std::string out = codegen::sanitizeIdentifier(name);
  if (reserved.count(out) || std::isdigit(static_cast<unsigned char>(out[0]))) out = "t_" + out;
  return out;
}

std::string torchDtype(graph::DType dtype) {
  switch (dtype) {
    case graph::DType::F16:
      return "torch.float16";
    case graph::DType::BF16:
      return "torch.bfloat16";
    case graph::DType::F32:
      return "torch.float32";
  }
  return "torch.float32";
}

std::string number(double value) {
  std::ostringstream out;
  out.precision(17);
  out << value;
  return out.str();
}

std::string expression(const graph::Program& program, const graph::KernelOp& op) {
  std::vector<std::string> in;
  for (graph::TensorId t : op.inputs) in.push_back(pythonName(program.tensors[t].name));
  const std::string dim = std::to_string(op.attrs.dim);
  switch (op.kind) {
    case graph::OpKind::Matmul:
      return "torch.matmul(" + in[0] + ", " + in[1] + ")";
    case graph::OpKind::Exp:
      return "torch.exp(" + in[0] + ")";
    case graph::OpKind::Square:
      return in[0] + " * " + in[0];
    case graph::OpKind::Sqrt:
      return "torch.sqrt(" + in[0] + ")";
    case graph::OpKind::Silu:
      return "torch.nn.functional.silu(" + in[0] + ")";
    case graph::OpKind::Sigmoid:
      return "torch.sigmoid(" + in[0] + ")";
    case graph::OpKind::Tanh:
      return "torch.tanh(" + in[0] + ")";
    case graph::OpKind::Erf:
      return "torch.erf(" + in[0] + ")";
    case graph::OpKind::Relu:
      return "torch.relu(" + in[0] + ")";
    case graph::OpKind::Scale:
      return in[0] + " * " + number(op.attrs.scale);
    case graph::OpKind::AddScalar:
      return in[0] + " + " + number(op.attrs.scale);
    case graph::OpKind::Add:
      return in[0] + " + " + in[1];
    case graph::OpKind::Sub:
      return in[0] + " - " + in[1];
    case graph::OpKind::Mul:
      return in[0] + " * " + in[1];
    case graph::OpKind::Div:
      return in[0] + " / " + in[1];
    case graph::OpKind::ReduceSum: {
      if (op.attrs.to == 1) return in[0] + ".sum(" + dim + ", keepdim=True)";
      const int64_t n = program.tensors[op.inputs[0]].shape[op.attrs.dim];
      return in[0] + ".unflatten(" + dim + ", (" + std::to_string(n / op.attrs.to) + ", " +
             std::to_string(op.attrs.to) + ")).sum(" + dim + ")";
    }
    case graph::OpKind::ReduceMax:
      return in[0] + ".amax(" + dim + ", keepdim=True)";
    case graph::OpKind::RmsNorm:
      return in[0] + " / torch.sqrt((" + in[0] + " * " + in[0] + ").mean(" + dim +
             ", keepdim=True))";
    case graph::OpKind::RotateHalf:
      return "torch.cat((-" + in[0] + ".chunk(2, " + dim + ")[1], " + in[0] + ".chunk(2, " + dim +
             ")[0]), " + dim + ")";
    case graph::OpKind::RotatePairs: {
      // The dim cut into (pair, lane of the pair); the lanes swapped, the first negated.
      const std::string pairs = in[0] + ".unflatten(" + dim + ", (-1, 2))";
      const std::string lane = std::to_string(op.attrs.dim + 1);
      return "torch.stack((-" + pairs + ".select(" + lane + ", 1), " + pairs + ".select(" + lane +
             ", 0)), " + lane + ").flatten(" + dim + ", " + lane + ")";
    }
    case graph::OpKind::CausalMask: {
      // graph/ops.h: row r keeps column c iff c <= r % q + (cols - q).
      const graph::Dims& shape = program.tensors[op.inputs[0]].shape;
      const std::string rows = std::to_string(shape[shape.size() - 2]);
      const std::string cols = std::to_string(shape.back());
      const std::string q =
          std::to_string(op.attrs.queries > 0 ? op.attrs.queries : shape[shape.size() - 2]);
      return in[0] + ".masked_fill(torch.arange(" + cols + ", device=" + in[0] +
             ".device)[None, :] > torch.arange(" + rows + ", device=" + in[0] +
             ".device)[:, None] % " + q + " + (" + cols + " - " + q + "), float('-inf'))";
    }
    default:
      throw UserError("program " + program.name,
                      "op " + std::string(graph::opName(op.kind)) + " has no PyTorch form");
  }
}

std::string shapeText(const graph::Dims& shape) {
  std::string out;
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out;
}

}  // namespace

std::string pytorchProgram(const graph::Program& program, bool native) {
  std::ostringstream py;
  std::string parameters;
  for (graph::TensorId t : program.inputs) parameters += ", " + pythonName(program.tensors[t].name);
  py << "import torch\n\n\n"
     << "class Model(torch.nn.Module):\n"
     << "    \"\"\"mugraph program " << program.name << ".\"\"\"\n\n"
     << "    def forward(self" << parameters << "):\n";
  for (graph::TensorId t : program.inputs) {
    const graph::TensorDesc& desc = program.tensors[t];
    const std::string name = pythonName(desc.name);
    const auto [first, second] = graph::swappedDimsFromEnd(desc.layout);
    py << "        " << name << " = " << name;
    if (first > 0) py << ".transpose(-" << first << ", -" << second << ")";
    py << (native ? "\n" : ".float()\n");
  }
  for (const graph::KernelOp& op : program.ops) {
    py << "        " << pythonName(program.tensors[op.outputs[0]].name) << " = "
       << expression(program, op) << "\n";
  }
  py << "        return ";
  for (size_t i = 0; i < program.outputs.size(); ++i) {
    const graph::TensorDesc& desc = program.tensors[program.outputs[i]];
    py << (i ? ", " : "") << pythonName(desc.name);
    if (!native) py << ".to(" << torchDtype(desc.dtype) << ")";
  }
  py << "\n\n\ndef get_inputs():\n    return [\n";
  for (graph::TensorId t : program.inputs) {
    const graph::TensorDesc& desc = program.tensors[t];
    graph::Dims stored = desc.shape;
    const auto [first, second] = graph::swappedDimsFromEnd(desc.layout);
    if (first > 0) std::swap(stored[stored.size() - first], stored[stored.size() - second]);
    py << "        torch.randn(" << shapeText(stored) << ", dtype=" << torchDtype(desc.dtype)
       << ", device=\"cuda\"),\n";
  }
  py << "    ]\n";
  return py.str();
}

}  // namespace mugraph::dataset
