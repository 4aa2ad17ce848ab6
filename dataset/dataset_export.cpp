#include "dataset/dataset_export.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "dataset/dataset_index.h"
#include "dataset/dataset_layout.h"
#include "dataset/dataset_rows.h"
#include "dataset/external_member.h"
#include "dataset/external_row_check.h"
#include "dataset/pytorch_program.h"
#include "graph/error.h"
#include "graph/files.h"
#include "graph/program_text.h"

namespace mugraph::dataset {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// One member as every format sees it.
struct Member {
  std::string key;
  json row;
  graph::Program program;
  std::string compiler;  // "mugraph", "triton", "cutlass", ...
  std::string language;  // "cuda" or "triton"
  std::string sourceText;
  json ptx = json::object();
  json schedule;  // null for external members
  std::optional<double> latencyUs;
};

std::string fileOf(const std::string& dir, const json& row, const std::string& name) {
  return graph::readFileText(dir + "/" + row.at("files").at(name).at("path").get<std::string>());
}

Member readMember(const std::string& dir, const std::string& key, const json& row) {
  Member m;
  m.key = key;
  m.row = row;
  if (isExternalRow(row)) {
    m.program = graph::loadProgram(dir + "/" + key + "/" + kMemberProgramFile);
    m.compiler = row.at("source").at("compiler").get<std::string>();
    m.language = row.at("source").at("language").get<std::string>();
    m.sourceText = fileOf(dir, row, row.at("source").at("file").get<std::string>());
  } else {
    const std::string text = fileOf(dir, row, "schedule.json");
    m.schedule = json::parse(text);
    m.program = graph::loadProgram(dir + "/" + key + "/schedule.json");
    m.compiler = "mugraph";
    m.language = "cuda";
    m.sourceText = fileOf(dir, row, "kernel.cu");
  }
  for (const json& arch : row.at("archs")) {
    m.ptx[arch.get<std::string>()] = fileOf(dir, row, arch.get<std::string>() + ".ptx");
  }
  if (row.contains("gpu") && row.at("gpu").contains("timing")) {
    const json& median = row.at("gpu").at("timing").at("median_us");
    if (median.is_number() && median.get<double>() > 0) m.latencyUs = median.get<double>();
  }
  return m;
}

json latency(const Member& m) {
  return m.latencyUs ? json(*m.latencyUs) : json();
}

json jsonlMember(const Member& m) {
  return {
      {"record", "member"},
      {"class", m.row.at("class")},
      {"variant", m.row.at("variant")},
      {"source", m.compiler},
      {"source_version", m.compiler == "mugraph" ? m.row.value("nvrtc", json::object())
                                                 : m.row.at("source").at("version")},
      {"generation_command", m.compiler == "mugraph" ? json() : m.row.at("source").at("command")},
      {"program_text", graph::programToText(m.program)},
      {"pytorch", pytorchProgram(m.program)},
      {"language", m.language},
      {"source_text", m.sourceText},
      {"cuda", m.language == "cuda" ? json(m.sourceText) : json()},
      {"ptx", m.ptx},
      {"schedule", m.schedule},
      {"latency_us", latency(m)},
      {"evidence", m.row.at("verification")},
      {"launch",
       {{"kernels", m.row.at("kernels")}, {"workspace_bytes", m.row.at("workspace_bytes")}}}};
}

json popcornRecord(const Member& m) {
  const std::string prompt =
      "Write a " + std::string(m.language == "triton" ? "Triton" : "CUDA") +
      " kernel for an H100 (sm_90) that computes the same outputs as this PyTorch program, "
      "for exactly the input shapes get_inputs() returns:\n\n```python\n" +
      pytorchProgram(m.program) + "```\n";
  return {{"input", prompt},
          {"output", m.sourceText},
          {"language", m.language},
          {"class", m.row.at("class")},
          {"variant", m.row.at("variant")},
          {"source", m.compiler},
          {"latency_us", latency(m)},
          {"evidence_level", m.row.at("verification").value("level", "")}};
}

json kernelbookRecord(const Member& m) {
  return {{"uuid", m.key},
          {"entry_point", "Model"},
          {"python_code", pytorchProgram(m.program)},
          {"triton_code", m.language == "triton" ? json(m.sourceText) : json()},
          {"cuda_code", m.language == "cuda" ? json(m.sourceText) : json()},
          {"ptx", m.ptx},
          {"kernel_source", m.compiler},
          {"class", m.row.at("class")},
          {"latency_us", latency(m)},
          {"evidence_level", m.row.at("verification").value("level", "")}};
}

}  // namespace

ExportFormat parseExportFormat(const std::string& name) {
  if (name == "jsonl") return ExportFormat::Jsonl;
  if (name == "popcorn") return ExportFormat::Popcorn;
  if (name == "kernelbook") return ExportFormat::KernelBook;
  throw UserError("--format", "'" + name + "' is not jsonl, popcorn or kernelbook");
}

ExportSummary exportDataset(const std::string& dir, ExportFormat format,
                            const std::string& outFile) {
  if (!fs::is_directory(dir)) throw UserError(dir, "is not a dataset folder");
  const std::map<std::string, json> rows =
      readManifestRows(dir + "/" + kManifestFile, /*strict=*/true);
  ExportSummary summary;
  std::string out;
  std::map<std::string, std::vector<Member>> byClass;
  for (const auto& [key, row] : rows) {
    if (rowExcluded(row)) continue;
    Member m = [&] {
      try {
        return readMember(dir, key, row);
      } catch (const json::exception& e) {
        throw UserError(std::string(kManifestFile) + " row " + key,
                        std::string("malformed (run dataset check): ") + e.what());
      }
    }();
    json record = format == ExportFormat::Jsonl     ? jsonlMember(m)
                  : format == ExportFormat::Popcorn ? popcornRecord(m)
                                                    : kernelbookRecord(m);
    out += record.dump() + "\n";
    ++summary.members;
    byClass[m.row.at("class").get<std::string>()].push_back(std::move(m));
  }
  if (format == ExportFormat::Jsonl) {
    // Every ordered pair of timed members of a class whose latencies differ: what a model
    // learns to rewrite (slower into faster), each with the measured speed-up.
    for (const auto& [cls, members] : byClass) {
      for (const Member& slow : members) {
        for (const Member& fast : members) {
          if (!slow.latencyUs || !fast.latencyUs || !(*fast.latencyUs < *slow.latencyUs)) continue;
          out += json{{"record", "pair"},
                      {"class", cls},
                      {"slower", slow.row.at("variant")},
                      {"faster", fast.row.at("variant")},
                      {"slower_source", slow.compiler},
                      {"faster_source", fast.compiler},
                      {"slower_us", *slow.latencyUs},
                      {"faster_us", *fast.latencyUs},
                      {"speedup", *slow.latencyUs / *fast.latencyUs}}
                     .dump() +
                 "\n";
          ++summary.pairs;
        }
      }
    }
  }
  summary.records = summary.members + summary.pairs;
  summary.bytes = static_cast<int64_t>(out.size());
  graph::writeFileAtomic(outFile, out);
  return summary;
}

}  // namespace mugraph::dataset
