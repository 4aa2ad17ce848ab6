// The .mg program text: a line-at-a-time parser that builds through GraphBuilder (so shapes
// are inferred in one place) and reports every problem with its line, and a printer whose
// output parses back to the identical Program.
#include "graph/program_text.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>
#include <stdexcept>

#include "graph/builder.h"
#include "graph/dynamic_dims.h"
#include "graph/error.h"
#include "graph/shape_inference.h"
#include "graph/syntax.h"
#include "graph/text_statement.h"
#include "graph/validate.h"

namespace mugraph::graph {
namespace {

using namespace text;  // NOLINT: the tokenizer of this parser

class TextParser {
 public:
  TextParser(std::string_view text, const std::string& source) : source_(source) {
    size_t begin = 0;
    while (begin <= text.size()) {
      size_t end = text.find('\n', begin);
      if (end == std::string_view::npos) end = text.size();
      lines_.push_back(stripComment(text.substr(begin, end - begin)));
      begin = end + 1;
    }
    reserveDeclaredNames();
  }

  Program parse();

 private:
  std::string where(size_t line) const { return source_ + ":" + std::to_string(line); }
  void reserveDeclaredNames();
  void parseProgramName(std::string_view rest, Statement& s);
  void parseDim(Statement& s, size_t line);
  void parseInput(Statement& s, size_t line);
  void parseAssignment(Statement& s, size_t line);
  void parseOutput(Statement& s, size_t line);
  TensorId parseCall(Statement& s, std::string resultName);
  TensorId useTensor(Statement& s, const std::string& name);
  std::string checkNewName(Statement& s, const std::string& name);
  std::string freshName();
  [[noreturn]] void failAtLocation(const IrError& error) const;

  std::string source_;
  std::vector<std::string_view> lines_;
  std::set<std::string> reserved_;         // every name the file declares, for fresh names
  std::map<std::string, size_t> defined_;  // tensor name -> line
  std::map<TensorId, size_t> outputLine_;
  std::vector<size_t> dimLines_, inputLines_, opLines_, outputLines_;
  GraphBuilder builder_;
  size_t firstAssignment_ = 0;
  size_t lastStatement_ = 0;  // line of the latest statement, for "program" and "no output"
  int nextFresh_ = 0;
};

void TextParser::reserveDeclaredNames() {
  for (std::string_view line : lines_) {
    std::string_view rest = trim(line);
    size_t n = 0;
    while (n < rest.size() && isIdentifierChar(rest[n])) ++n;
    const std::string first(rest.substr(0, n));
    rest = trim(rest.substr(n));
    if (first == "input") {
      size_t m = 0;
      while (m < rest.size() && isIdentifierChar(rest[m])) ++m;
      reserved_.insert(std::string(rest.substr(0, m)));
    } else if (!rest.empty() && rest[0] == '=') {
      reserved_.insert(first);
    }
  }
}

std::string TextParser::freshName() {
  for (;;) {
    std::string name = "t" + std::to_string(nextFresh_++);
    if (!reserved_.count(name) && !builder_.graph().findTensor(name)) return name;
  }
}

std::string TextParser::checkNewName(Statement& s, const std::string& name) {
  auto previous = defined_.find(name);
  if (previous != defined_.end()) {
    s.fail("duplicate tensor name '" + name + "' (first defined on line " +
           std::to_string(previous->second) + ")");
  }
  return name;
}

TensorId TextParser::useTensor(Statement& s, const std::string& name) {
  if (std::optional<TensorId> id = builder_.graph().findTensor(name)) return *id;
  if (reserved_.count(name)) {
    s.fail("tensor '" + name + "' is used before it is defined (forward reference or cycle)");
  }
  s.fail("unknown tensor '" + name + "'");
}

void TextParser::parseProgramName(std::string_view rest, Statement& s) {
  if (lastStatement_ != 0) s.fail("'program NAME' must be the first statement");
  const std::string name(trim(rest));
  if (name.empty() || !isGraphName(name)) {
    s.fail("expected a program name (letters, digits, '_.-'), got '" + name + "'");
  }
  builder_ = GraphBuilder(name);
}

// dim NAME in [MIN, MAX]
void TextParser::parseDim(Statement& s, size_t line) {
  if (firstAssignment_ != 0 || !inputLines_.empty()) {
    s.fail("dims must be declared before the inputs and the first assignment");
  }
  const std::string name = s.expectIdentifier("a dim name");
  if (s.peek().kind != TokenKind::Identifier || s.peek().text != "in") {
    s.fail("expected 'in' after the dim name, e.g. dim s in [1, 65536]");
  }
  s.next();
  s.expectPunct("[", "before the range of dim '" + name + "'");
  const int64_t min = s.integer("the min of dim '" + name + "'", 0, kMaxDimSize);
  s.expectPunct(",", "between the min and the max");
  const int64_t max = s.integer("the max of dim '" + name + "'", 0, kMaxDimSize);
  s.expectPunct("]", "after the range");
  s.expectEnd();
  if (auto problem = dimDeclarationProblem(name, min, max, builder_.graph().dims)) {
    s.fail(problem->reason);
  }
  if (reserved_.count(name)) s.fail("dim '" + name + "' has the name of a tensor");
  dimLines_.push_back(line);
  builder_.dim(DynamicDim{name, min, max});
}

void TextParser::parseInput(Statement& s, size_t line) {
  if (firstAssignment_ != 0) {
    s.fail("inputs must be declared before the first assignment (line " +
           std::to_string(firstAssignment_) + ")");
  }
  const std::string name = checkNewName(s, s.expectIdentifier("an input name"));
  const std::string dtypeText = s.expectIdentifier("a dtype (f16, bf16 or f32)");
  const std::optional<DType> dtype = parseDType(dtypeText);
  if (!dtype) s.fail("unknown dtype '" + dtypeText + "' (f16, bf16 or f32)");
  s.expectPunct("[", "before the dims of '" + name + "'");
  Dims shape;
  std::vector<int> dynamicDims;
  while (!s.isPunct("]")) {
    if (!shape.empty()) s.expectPunct(",", "between dims");
    if (s.peek().kind == TokenKind::Identifier) {
      const std::string dimName = s.next().text;
      const std::optional<int> dim = findDim(builder_.graph(), dimName);
      if (!dim) {
        s.fail("unknown dim '" + dimName + "' (declare it first: dim " + dimName +
               " in [MIN, MAX])");
      }
      dynamicDims.resize(shape.size(), kStaticDim);
      dynamicDims.push_back(*dim);
      shape.push_back(builder_.graph().dims[*dim].max);
      continue;
    }
    shape.push_back(
        s.integer("dim " + std::to_string(shape.size()) + " of '" + name + "'", 1, kMaxDimSize));
  }
  if (!dynamicDims.empty()) dynamicDims.resize(shape.size(), kStaticDim);
  s.expectPunct("]", "after the dims");
  if (shape.empty() || shape.size() > static_cast<size_t>(kMaxRank)) {
    s.fail("input '" + name + "' has rank " + std::to_string(shape.size()) + " (1 to 4 supported)");
  }
  Layout layout = Layout::RowMajor;
  if (s.peek().kind != TokenKind::End) {
    const std::string key = s.expectIdentifier("'layout='");
    if (key != "layout") s.fail("unknown keyword '" + key + "' (only layout= follows the dims)");
    s.expectPunct("=", "after 'layout'");
    const std::string value =
        s.expectIdentifier("a layout (row_major, transposed or heads_transposed)");
    const std::optional<Layout> parsed = parseLayout(value);
    if (!parsed) {
      s.fail("unknown layout '" + value + "' (row_major, transposed or heads_transposed)");
    }
    layout = *parsed;
    const int needs = swappedDimsFromEnd(layout).first;
    if (static_cast<int>(shape.size()) < needs) {
      s.fail("input '" + name + "' is " + std::string(layoutName(layout)) + " but has rank " +
             std::to_string(shape.size()) + " (needs " + std::to_string(needs) + ")");
    }
  }
  s.expectEnd();
  defined_[name] = line;
  inputLines_.push_back(line);
  builder_.input(name, *dtype, shape, layout, std::move(dynamicDims));
}

TensorId TextParser::parseCall(Statement& s, std::string resultName) {
  const std::string opText = s.expectIdentifier("an op name");
  const std::optional<OpKind> kind = parseOpKind(opText);
  if (!kind) s.fail("unknown op '" + opText + "'");
  if (!isPredefinedOp(*kind)) s.fail("'" + opText + "' is not a program op");
  const OpInfo& info = opInfo(*kind);
  s.expectPunct("(", "after '" + opText + "'");
  std::vector<TensorId> operands;
  OpAttrs attrs;
  std::set<std::string> keywords;
  while (!s.isPunct(")")) {
    if (s.peek().kind == TokenKind::End) s.fail("missing ')' to close " + opText + "(");
    if (!operands.empty() || !keywords.empty()) s.expectPunct(",", "between arguments");
    if (s.peek().kind == TokenKind::Identifier && s.isPunct("=", 1)) {
      const std::string key = s.next().text;
      s.next();
      const bool takes = (key == "dim" && info.hasDim) || (key == "to" && info.hasTo) ||
                         (key == "c" && info.hasScale) || (key == "queries" && info.hasQueries);
      if (key != "dim" && key != "to" && key != "c" && key != "queries") {
        s.fail("unknown keyword '" + key + "' (dim=, to=, c= or queries=)");
      }
      if (!takes) s.fail(opText + " takes no '" + key + "='");
      if (!keywords.insert(key).second) s.fail("'" + key + "=' is given twice");
      if (key == "dim") attrs.dim = static_cast<int>(s.integer("dim=", 0, kMaxRank - 1));
      if (key == "to") attrs.to = s.integer("to=", 1, kMaxDimSize);
      if (key == "c") attrs.scale = s.number("c=");
      if (key == "queries") attrs.queries = s.integer("queries=", 1, kMaxDimSize);
    } else if (s.peek().kind == TokenKind::Identifier && s.isPunct("(", 1)) {
      operands.push_back(parseCall(s, ""));
    } else if (s.peek().kind == TokenKind::Identifier) {
      operands.push_back(useTensor(s, s.next().text));
    } else {
      s.fail("expected an operand of " + opText + ", got " + describe(s.peek()));
    }
  }
  s.next();
  if (info.hasDim && !keywords.count("dim")) s.fail(opText + " needs dim=");
  if (info.hasScale && !keywords.count("c")) s.fail(opText + " needs c=");
  if (static_cast<int>(operands.size()) != info.arity) {
    s.fail(opText + " takes " + std::to_string(info.arity) + " operand(s), got " +
           std::to_string(operands.size()));
  }
  try {
    // Nested calls are named once their operands exist, so t0, t1, ... follow op order.
    if (resultName.empty()) resultName = freshName();
    return builder_.op(*kind, std::move(operands), attrs, resultName);
  } catch (const ShapeError& e) {
    s.fail(e.what());
  }
}

void TextParser::parseAssignment(Statement& s, size_t line) {
  const std::string name = checkNewName(s, s.next().text);
  s.next();  // '='
  if (firstAssignment_ == 0) firstAssignment_ = line;
  if (s.peek().kind != TokenKind::Identifier || !s.isPunct("(", 1)) {
    s.fail("expected an op call after '" + name + " =', e.g. exp(X)");
  }
  const size_t opsBefore = builder_.graph().ops.size();
  parseCall(s, name);
  s.expectEnd();
  opLines_.resize(builder_.graph().ops.size(), line);
  for (size_t k = opsBefore; k < opLines_.size(); ++k) {
    defined_[builder_.graph().tensors[builder_.graph().ops[k].outputs[0]].name] = line;
  }
}

void TextParser::parseOutput(Statement& s, size_t line) {
  const std::string name = s.expectIdentifier("a tensor name");
  Layout layout = Layout::RowMajor;
  if (s.peek().kind != TokenKind::End) {
    const std::string key = s.expectIdentifier("'layout='");
    if (key != "layout") s.fail("unknown keyword '" + key + "' (only layout= follows the name)");
    s.expectPunct("=", "after 'layout'");
    const std::string value = s.expectIdentifier("a layout (row_major or heads_transposed)");
    const std::optional<Layout> parsed = parseLayout(value);
    if (!parsed || *parsed == Layout::Transposed) {
      s.fail("output layout '" + value + "' (an output is stored row_major or heads_transposed)");
    }
    layout = *parsed;
  }
  s.expectEnd();
  const TensorId id = useTensor(s, name);
  const TensorDesc& desc = builder_.desc(id);
  if (layout != Layout::RowMajor) {
    bool computed = false;
    for (const KernelOp& op : builder_.graph().ops) computed = computed || op.outputs[0] == id;
    if (!computed) s.fail("input '" + name + "' is output as it is stored; it takes no layout");
    const int needs = swappedDimsFromEnd(layout).first;
    if (static_cast<int>(desc.shape.size()) < needs) {
      s.fail("output '" + name + "' is " + std::string(layoutName(layout)) + " but has rank " +
             std::to_string(desc.shape.size()) + " (needs " + std::to_string(needs) + ")");
    }
  }
  auto previous = outputLine_.find(id);
  if (previous != outputLine_.end()) {
    s.fail("tensor '" + name + "' is output twice (first on line " +
           std::to_string(previous->second) + ")");
  }
  outputLine_[id] = line;
  outputLines_.push_back(line);
  builder_.output(id, layout);
}

[[noreturn]] void TextParser::failAtLocation(const IrError& error) const {
  const IrLocation& at = error.location();
  size_t line = lines_.size();
  const auto pick = [&](const std::vector<size_t>& lines) {
    if (at.index >= 0 && at.index < static_cast<int>(lines.size())) line = lines[at.index];
  };
  if (at.section == "dims") pick(dimLines_);
  if (at.section == "inputs") pick(inputLines_);
  if (at.section == "ops") pick(opLines_);
  if (at.section == "outputs") pick(outputLines_);
  if (at.section == "tensors" && at.index >= 0) {
    const Program& program = builder_.graph();
    for (size_t i = 0; i < program.inputs.size(); ++i) {
      if (program.inputs[i] == at.index) line = inputLines_[i];
    }
    for (size_t k = 0; k < program.ops.size(); ++k) {
      if (program.ops[k].outputs[0] == at.index) line = opLines_[k];
    }
  }
  throw UserError(where(line), error.what());
}

Program TextParser::parse() {
  for (size_t i = 0; i < lines_.size(); ++i) {
    const size_t line = i + 1;
    Statement s(lines_[i], where(line));
    const Token first = s.peek();
    if (first.kind == TokenKind::End) continue;
    if (first.kind == TokenKind::Identifier && s.isPunct("=", 1)) {
      parseAssignment(s, line);
      lastStatement_ = line;
      continue;
    }
    if (first.kind != TokenKind::Identifier) {
      s.fail("expected a statement (program, dim, input, output or NAME = op(...)), got " +
             describe(first));
    }
    s.next();
    if (first.text == "program") {
      const std::string_view rest = trim(lines_[i]).substr(first.text.size());
      parseProgramName(rest, s);
    } else if (first.text == "dim") {
      parseDim(s, line);
    } else if (first.text == "input") {
      parseInput(s, line);
    } else if (first.text == "output") {
      parseOutput(s, line);
    } else {
      s.fail("expected a statement (program, dim, input, output or NAME = op(...)), got " +
             describe(first));
    }
    lastStatement_ = line;
  }
  if (outputLines_.empty()) {
    throw UserError(where(std::max<size_t>(lastStatement_, 1)),
                    "the program has no 'output' statement");
  }
  const Program program = builder_.graph();
  try {
    validateProgram(program);
  } catch (const IrError& e) {
    failAtLocation(e);
  }
  return program;
}

std::string formatNumber(double value) {
  char text[64];
  const auto result = std::to_chars(text, text + sizeof text, value);
  return std::string(text, result.ptr);
}

void checkPrintable(bool ok, const std::string& name) {
  if (!ok) throw std::invalid_argument("programToText: '" + name + "' is not a printable name");
}

// "[8, 128, s]": a dynamic dim by its name.
std::string shapeText(const Program& program, const TensorDesc& desc) {
  if (desc.dynamicDims.empty()) return formatDims(desc.shape);
  std::string text = "[";
  for (size_t d = 0; d < desc.shape.size(); ++d) {
    const int dim = dynamicDimOf(desc, static_cast<int>(d));
    text += (d ? ", " : "") +
            (dim == kStaticDim ? std::to_string(desc.shape[d]) : program.dims.at(dim).name);
  }
  return text + "]";
}

}  // namespace

Program parseProgramText(std::string_view text, const std::string& sourceName) {
  return TextParser(text, sourceName).parse();
}

std::string programToText(const Program& program) {
  std::string out;
  checkPrintable(isGraphName(program.name), program.name);
  if (!program.name.empty()) out += "program " + program.name + "\n";
  for (const DynamicDim& d : program.dims) {
    checkPrintable(isTensorName(d.name), d.name);
    out += "dim " + d.name + " in [" + std::to_string(d.min) + ", " + std::to_string(d.max) + "]\n";
  }
  for (const TensorDesc& t : program.tensors) checkPrintable(isTensorName(t.name), t.name);
  for (TensorId t : program.inputs) {
    const TensorDesc& d = program.tensors[t];
    out += "input " + d.name + " " + std::string(dtypeName(d.dtype)) + " " + shapeText(program, d);
    if (d.layout != Layout::RowMajor) out += " layout=" + std::string(layoutName(d.layout));
    out += "\n";
  }
  for (const KernelOp& op : program.ops) {
    const OpInfo& info = opInfo(op.kind);
    out += program.tensors[op.outputs.at(0)].name + " = " + std::string(info.name) + "(";
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      out += (i ? ", " : "") + program.tensors[op.inputs[i]].name;
    }
    if (info.hasDim) out += ", dim=" + std::to_string(op.attrs.dim);
    if (info.hasTo && op.attrs.to != 1) out += ", to=" + std::to_string(op.attrs.to);
    if (info.hasScale) out += ", c=" + formatNumber(op.attrs.scale);
    if (info.hasQueries && op.attrs.queries > 0) {
      out += ", queries=" + std::to_string(op.attrs.queries);
    }
    out += ")\n";
  }
  for (TensorId t : program.outputs) {
    out += "output " + program.tensors[t].name;
    const bool computed =
        std::find(program.inputs.begin(), program.inputs.end(), t) == program.inputs.end();
    if (computed && program.tensors[t].layout != Layout::RowMajor) {
      out += " layout=" + std::string(layoutName(program.tensors[t].layout));
    }
    out += "\n";
  }
  return out;
}

}  // namespace mugraph::graph
