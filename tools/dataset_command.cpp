// `mugraph dataset PROGRAM... --out DIR`: superoptimizes each program (or takes saved
// schedules with --from-schedules) and writes one equivalence class per program with every
// verified variant's code and a manifest; `mugraph dataset check DIR` audits a dataset.
#include <filesystem>
#include <iostream>
#include <map>

#include "codegen/generate.h"
#include "dataset/dataset_builder.h"
#include "dataset/dataset_check.h"
#include "dataset/dataset_export.h"
#include "dataset/external_member.h"
#include "distributed/ranks.h"
#include "driver/superoptimize.h"
#include "graph/error.h"
#include "graph/files.h"
#include "graph/hash.h"
#include "search/builtin_programs.h"
#include "tools/commands.h"

namespace mugraph::tools {
namespace {

namespace fs = std::filesystem;

struct DatasetFlags {
  std::vector<std::string> programs;
  std::string out;
  std::string archs = codegen::kDefaultArchList;
  int threads = 0;
  double timeLimit = 0;
  bool run = false;
  std::string fromSchedules;
  int maxVariants = 0;
  std::string checkDir;
  bool checkRun = false;
  bool checkRecord = false;
  std::string addDir;
  std::vector<std::string> addFolders;
  std::string exportDir;
  std::string exportFormat = "jsonl";
  std::string exportOut;
};

// Every schedule JSON under `dir` (a folder of saved schedules, or a dataset), by program.
std::map<uint64_t, dataset::DatasetClassInput> schedulesUnder(const std::string& dir) {
  if (!fs::is_directory(dir)) throw UserError(dir, "is not a folder of schedules");
  std::vector<std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    const std::string path = entry.path().string();
    if (!entry.is_regular_file() || entry.path().extension() != ".json") continue;
    if (path.find("/.staging-") != std::string::npos) continue;
    files.push_back(path);
  }
  std::sort(files.begin(), files.end());
  std::map<uint64_t, dataset::DatasetClassInput> classes;
  for (const std::string& path : files) {
    const graph::LoadedFile loaded = [&] {
      try {
        return graph::loadFile(path);
      } catch (const UserError&) {
        return graph::LoadedFile{};  // manifests, resources and other JSON files
      }
    }();
    if (!loaded.schedule) continue;
    dataset::DatasetClassInput& cls = classes[graph::programHash(loaded.program)];
    cls.program = loaded.program;
    cls.schedules.push_back(*loaded.schedule);
  }
  return classes;
}

int buildCommand(const DatasetFlags& flags) {
  if (flags.out.empty()) throw UserError("--out", "a dataset folder is required");
  std::vector<dataset::DatasetClassInput> classes;
  if (!flags.fromSchedules.empty()) {
    std::set<uint64_t> wanted;
    for (const std::string& p : flags.programs) {
      wanted.insert(graph::programHash(search::loadProgramOrBuiltin(p)));
    }
    for (auto& [hash, cls] : schedulesUnder(flags.fromSchedules)) {
      if (wanted.empty() || wanted.count(hash)) classes.push_back(std::move(cls));
    }
    if (classes.empty()) throw UserError(flags.fromSchedules, "holds no matching schedule");
  } else {
    if (flags.programs.empty()) throw UserError("PROGRAM", "name at least one program");
    for (const std::string& p : flags.programs) {
      const graph::Program program = search::loadProgramOrBuiltin(p);
      if (!program.dims.empty()) {
        throw UserError(p,
                        "the program has dynamic dims: a dataset's members are PTX, and kernels "
                        "that take the lengths come in a later slice of issue 28");
      }
      driver::RunOptions options;
      options.arch = codegen::archName(codegen::parseArchList(flags.archs).front());
      options.threads = flags.threads;
      options.timeLimit = flags.timeLimit;
      if (distributed::isRoot()) std::cerr << "dataset: superoptimizing " << program.name << "\n";
      const driver::ProgramRun run = driver::superoptimizeProgram(program, options, nullptr);
      dataset::DatasetClassInput cls{program, {}};
      for (const search::VerifiedVariant& v : run.result.variants) {
        if (flags.maxVariants > 0 && static_cast<int>(cls.schedules.size()) >= flags.maxVariants) {
          break;
        }
        cls.schedules.push_back(v.schedule);
      }
      classes.push_back(std::move(cls));
    }
  }
  // Under mpirun every rank took part in each program's search (its subtrees and candidates
  // are spread over the ranks); rank 0 alone writes the dataset and reports its exit code.
  if (!distributed::isRoot()) return kExitOk;
  dataset::DatasetOptions options;
  options.outDir = flags.out;
  options.archs = codegen::parseArchList(flags.archs);
  options.runOnGpu = flags.run;
  options.progress = [](const std::string& line) { std::cerr << "dataset: " << line << "\n"; };
  const dataset::DatasetSummary s = dataset::buildDataset(classes, options);
  std::cout << "dataset " << flags.out << ": " << s.classes << " classes, " << s.variants
            << " variants (" << s.written << " written, " << s.skipped << " already there, "
            << s.rejected << " rejected)\n";
  return s.rejected > 0 ? kExitCheckFailed : kExitOk;
}

int checkCommand(const DatasetFlags& flags) {
  if (flags.checkRecord && !flags.checkRun) throw UserError("--record", "needs --run");
  const dataset::DatasetCheckReport report =
      dataset::checkDataset(flags.checkDir, {flags.checkRun, flags.checkRecord});
  for (const std::string& line : report.gpuLines) std::cout << line << "\n";
  for (const std::string& p : report.problems) std::cout << "problem: " << p << "\n";
  std::cout << flags.checkDir << ": " << report.rows << " rows, " << report.variantsChecked
            << " variants checked (" << report.externalMembers << " external, " << report.excluded
            << " kept out), " << report.gpuRuns << " run on the GPU, " << report.problems.size()
            << " problems\n";
  return report.problems.empty() ? kExitOk : kExitCheckFailed;
}

int exportCommand(const DatasetFlags& flags) {
  const dataset::ExportFormat format = dataset::parseExportFormat(flags.exportFormat);
  const std::string out = flags.exportOut.empty()
                              ? flags.exportDir + "/export." + flags.exportFormat + ".jsonl"
                              : flags.exportOut;
  const dataset::ExportSummary s = dataset::exportDataset(flags.exportDir, format, out);
  std::cout << out << ": " << s.records << " records (" << s.members << " members, " << s.pairs
            << " pairs), " << s.bytes << " bytes\n";
  return kExitOk;
}

int addCommand(const DatasetFlags& flags) {
  for (const std::string& folder : flags.addFolders) {
    std::cout << "added " << dataset::addExternalMember(flags.addDir, folder) << "\n";
  }
  return kExitOk;
}

}  // namespace

Command addDatasetCommand(CLI::App& app) {
  auto flags = std::make_shared<DatasetFlags>();
  CLI::App* sub = app.add_subcommand(
      "dataset",
      "Write equivalent-PTX datasets: one class per program, every verified variant with its "
      "schedule, CUDA C++, PTX and a manifest row. `dataset check DIR` audits one.");
  sub->add_option("PROGRAM", flags->programs, "built-in name or program file (several allowed)");
  sub->add_option("--out", flags->out, "dataset folder (created; reruns complete it)");
  sub->add_option("--arch", flags->archs,
                  "targets, comma-separated: each gets PTX, the first one's plan is searched and "
                  "generated (the others must plan alike)")
      ->capture_default_str();
  sub->add_option("--threads", flags->threads, "search threads (default: all cores)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--time-limit", flags->timeLimit, "search time limit per program, seconds")
      ->check(CLI::NonNegativeNumber);
  sub->add_flag("--run", flags->run, "also measure latency and error on the GPU");
  sub->add_option("--from-schedules", flags->fromSchedules,
                  "take saved schedules from this folder instead of searching");
  sub->add_option("--max-variants", flags->maxVariants, "keep at most N variants per program")
      ->check(CLI::NonNegativeNumber);
  CLI::App* check = sub->add_subcommand("check",
                                        "Re-hash and re-parse a dataset; exit 1 on any "
                                        "missing or inconsistent entry.");
  check->add_option("DIR", flags->checkDir, "dataset folder")->required();
  check->add_flag("--run", flags->checkRun,
                  "launch every member from its manifest on the GPU, on fresh random inputs at "
                  "several spreads, compare with the program and time it");
  check->add_flag("--record", flags->checkRecord,
                  "with --run: write each member's timing, and external members' evidence "
                  "(passed, or failed and kept out of the class), into the dataset");
  CLI::App* add = sub->add_subcommand(
      "add",
      "Add external members (kernels from Triton, CUTLASS, TVM: folders written by "
      "tools/python/add_external_members.py) to a dataset, after checking their launch ABI.");
  add->add_option("DIR", flags->addDir, "dataset folder")->required();
  add->add_option("FOLDER", flags->addFolders, "member folders")->required();
  CLI::App* exporter = sub->add_subcommand(
      "export",
      "Write a dataset as JSON Lines for training models on kernels: jsonl (ours: programs, "
      "sources, PTX, schedules, latencies, evidence, and slower -> faster pairs), popcorn "
      "({\"input\", \"output\"} records) or kernelbook (PyTorch module beside its kernel); "
      "dataset/README.md documents each.");
  exporter->add_option("DIR", flags->exportDir, "dataset folder")->required();
  exporter->add_option("--format", flags->exportFormat, "jsonl, popcorn or kernelbook")
      ->capture_default_str();
  exporter->add_option("--out", flags->exportOut, "output file (default DIR/export.F.jsonl)");
  return {sub, [flags, check, add, exporter]() {
            if (check->parsed()) return checkCommand(*flags);
            if (add->parsed()) return addCommand(*flags);
            if (exporter->parsed()) return exportCommand(*flags);
            return buildCommand(*flags);
          }};
}

}  // namespace mugraph::tools
