// `mugraph dataset PROGRAM... --out DIR`: superoptimizes each program (or takes saved
// schedules with --from-schedules) and writes one equivalence class per program with every
// verified variant's code and a manifest; `mugraph dataset check DIR` audits a dataset.
#include <unistd.h>

#include <any>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <stdexcept>

#include "codegen/generate.h"
#include "dataset/dataset_builder.h"
#include "dataset/dataset_check.h"
#include "dataset/dataset_export.h"
#include "dataset/dataset_index.h"
#include "dataset/dataset_layout.h"
#include "dataset/dataset_rows.h"
#include "dataset/external_member.h"
#include "distributed/folder_bytes.h"
#include "distributed/ranks.h"
#include "distributed/work_queue.h"
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
  bool resume = false;
  std::string spread = "auto";
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

// What building one program's class gives rank 0: the rows and variant folders it wrote (in a
// scratch dataset on the rank that searched it) and its progress lines.
struct ClassOutcome {
  dataset::DatasetSummary counts;
  std::map<std::string, nlohmann::json> rows;  // "<class>/<variant>" -> row
  std::map<std::string, std::string> folders;  // "<class>/<variant>" -> packed folder
  std::vector<std::string> lines;
  int rank = 0;
};

std::string encodeOutcome(const ClassOutcome& o) {
  nlohmann::json head = {{"counts",
                          {o.counts.classes, o.counts.variants, o.counts.written, o.counts.skipped,
                           o.counts.rejected}},
                         {"rows", o.rows},
                         {"lines", o.lines},
                         {"rank", o.rank},
                         {"sizes", nlohmann::json::object()}};
  std::string bytes;
  for (const auto& [key, packed] : o.folders) {
    head["sizes"][key] = packed.size();
    bytes += packed;
  }
  const std::string text = head.dump();
  return std::to_string(text.size()) + "\n" + text + bytes;
}

ClassOutcome decodeOutcome(const std::string& bytes) {
  const size_t newline = bytes.find('\n');
  const size_t size = std::stoull(bytes.substr(0, newline));
  const nlohmann::json head = nlohmann::json::parse(bytes.substr(newline + 1, size));
  ClassOutcome o;
  const nlohmann::json& c = head.at("counts");
  o.counts = {c[0], c[1], c[2], c[3], c[4]};
  o.rows = head.at("rows").get<std::map<std::string, nlohmann::json>>();
  o.lines = head.at("lines").get<std::vector<std::string>>();
  o.rank = head.at("rank");
  size_t at = newline + 1 + size;
  for (const auto& [key, packedSize] : head.at("sizes").items()) {
    o.folders[key] = bytes.substr(at, packedSize.get<size_t>());
    at += packedSize.get<size_t>();
  }
  return o;
}

// Searches `program` (spread over every rank, or on this rank alone when it was dealt whole)
// and, on rank 0 of that search, builds its class into a scratch dataset.
ClassOutcome searchAndBuild(const graph::Program& program, const DatasetFlags& flags,
                            const std::set<std::string>& alreadyPresent) {
  driver::RunOptions options;
  options.arch = codegen::archName(codegen::parseArchList(flags.archs).front());
  options.threads = flags.threads;
  options.timeLimit = flags.timeLimit;
  // One progress line, rank 0's: the other ranks' searches run alone, and would draw theirs too.
  options.progress = distributed::rankInJob() == 0;
  const driver::ProgramRun run = driver::superoptimizeProgram(program, options, nullptr);
  ClassOutcome outcome;
  outcome.rank = distributed::rankInJob();
  if (!distributed::isRoot()) return outcome;
  dataset::DatasetClassInput cls{program, {}};
  for (const search::VerifiedVariant& v : run.result.variants) {
    if (flags.maxVariants > 0 && static_cast<int>(cls.schedules.size()) >= flags.maxVariants) {
      break;
    }
    cls.schedules.push_back(v.schedule);
  }
  const std::string scratch =
      (fs::temp_directory_path() / ("mugraph-" + std::to_string(::getpid()) + "-dataset")).string();
  fs::remove_all(scratch);
  dataset::DatasetOptions builderOptions;
  builderOptions.outDir = scratch;
  builderOptions.archs = codegen::parseArchList(flags.archs);
  builderOptions.runOnGpu = flags.run;
  builderOptions.chooseGpu = driver::gpuOfThisRank;
  builderOptions.alreadyPresent = alreadyPresent;
  builderOptions.threads = flags.threads;
  builderOptions.progress = [&](const std::string& line) { outcome.lines.push_back(line); };
  outcome.counts = dataset::buildDataset({cls}, builderOptions);
  outcome.rows = dataset::readManifestRows(scratch + "/" + dataset::kManifestFile, false);
  for (const auto& [key, row] : outcome.rows) {
    outcome.folders[key] = distributed::packFolder(scratch + "/" + key);
  }
  fs::remove_all(scratch);
  return outcome;
}

// Rank 0: every variant folder of `outcome` put in place (a scratch folder, then one rename),
// then the index with its rows.
void installClass(const std::string& out, const ClassOutcome& outcome,
                  std::map<std::string, nlohmann::json>& rows) {
  for (const auto& [key, packed] : outcome.folders) {
    const fs::path dir = fs::path(out) / key;
    const fs::path staging = dir.parent_path() / (".staging-" + dir.filename().string());
    fs::remove_all(staging);
    distributed::unpackFolder(packed, staging.string());
    fs::remove_all(dir);
    fs::rename(staging, dir);
  }
  for (const auto& [key, row] : outcome.rows) rows[key] = row;
  if (!outcome.rows.empty()) dataset::writeDatasetIndex(out, rows);
}

void addCounts(dataset::DatasetSummary& total, const dataset::DatasetSummary& one) {
  total.classes += one.classes;
  total.variants += one.variants;
  total.written += one.written;
  total.skipped += one.skipped;
  total.rejected += one.rejected;
}

int printBuilt(const DatasetFlags& flags, const dataset::DatasetSummary& s) {
  std::cout << "dataset " << flags.out << ": " << s.classes << " classes, " << s.variants
            << " variants (" << s.written << " written, " << s.skipped << " already there, "
            << s.rejected << " rejected)\n";
  return s.rejected > 0 ? kExitCheckFailed : kExitOk;
}

// The programs of a dataset over the ranks (distributed/work_queue.h: runItems): each program's
// search and class built on one rank, or one after another with each search over every rank.
// Rank 0 alone writes under --out; the files are the same for any number of ranks.
int buildFromPrograms(const DatasetFlags& flags) {
  if (flags.programs.empty()) throw UserError("PROGRAM", "name at least one program");
  std::vector<graph::Program> programs;
  for (const std::string& p : flags.programs) {
    programs.push_back(search::loadProgramOrBuiltin(p));
    if (!programs.back().dims.empty()) {
      throw UserError(p,
                      "the program has dynamic dims: a dataset's members are PTX, and kernels "
                      "that take the lengths come in a later slice of issue 28");
    }
  }
  // Rank 0 reads what the dataset holds and tells every rank: the intact variants (not built
  // again) and, with --resume, the programs still to do (a class is installed whole, so a class
  // in the manifest is a finished program).
  std::map<std::string, nlohmann::json> rows;
  nlohmann::json plan = {{"present", nlohmann::json::array()}, {"todo", nlohmann::json::array()}};
  if (distributed::isRoot()) {
    fs::create_directories(flags.out);
    rows = dataset::readManifestRows(flags.out + "/" + dataset::kManifestFile, false);
    std::set<std::string> finishedClasses;
    for (const auto& [key, row] : rows) {
      if (!dataset::rowFilesIntact(flags.out, row)) continue;
      plan["present"].push_back(key);
      finishedClasses.insert(row.at("class").get<std::string>());
    }
    for (size_t i = 0; i < programs.size(); ++i) {
      if (flags.resume && finishedClasses.count(dataset::classId(programs[i]))) {
        std::cerr << "dataset: resuming: " << programs[i].name << " is already in " << flags.out
                  << "\n";
        continue;
      }
      plan["todo"].push_back(i);
    }
  }
  plan = nlohmann::json::parse(distributed::broadcast(plan.dump()));
  const std::set<std::string> present = plan.at("present").get<std::set<std::string>>();
  distributed::WorkItems work;
  work.items = plan.at("todo").get<std::vector<int>>();
  const distributed::Spread spread = [&] {
    try {
      return distributed::chooseSpread(flags.spread, work.items.size(), distributed::ranks());
    } catch (const std::invalid_argument& e) {
      throw UserError("--spread", e.what());
    }
  }();
  dataset::DatasetSummary total;
  int finished = 0;
  work.run = [&](int item) { return std::any(searchAndBuild(programs[item], flags, present)); };
  work.encode = [](const std::any& r) {
    return encodeOutcome(std::any_cast<const ClassOutcome&>(r));
  };
  work.decode = [](const std::string& bytes) { return std::any(decodeOutcome(bytes)); };
  work.collect = [&](int item, std::any&& result, double seconds) {
    const ClassOutcome outcome = std::any_cast<ClassOutcome&&>(std::move(result));
    installClass(flags.out, outcome, rows);
    addCounts(total, outcome.counts);
    for (const std::string& line : outcome.lines) std::cerr << "dataset: " << line << "\n";
    std::cerr << "dataset: [" << ++finished << "/" << work.items.size() << "] "
              << programs[item].name << ": " << outcome.counts.variants << " variants, "
              << static_cast<int>(seconds + 0.5) << " s (rank " << outcome.rank << ")\n";
  };
  const std::vector<distributed::RankShare> shares = distributed::runItems(work, spread);
  if (!distributed::isRoot()) return kExitOk;
  // The index once more, as buildDataset ends: a run killed between the manifest's write and
  // classes.json's is repaired even where this one finds every variant there.
  if (!rows.empty()) dataset::writeDatasetIndex(flags.out, rows);
  for (size_t r = 0; r < shares.size(); ++r) {
    std::cerr << "dataset: rank " << r << ": " << shares[r].items << " programs, "
              << (flags.threads > 0 ? std::to_string(flags.threads) : std::string("every core's"))
              << " search threads, busy " << shares[r].busySeconds << " s, done at "
              << shares[r].seconds << " s (spread: " << distributed::spreadName(spread) << ")\n";
  }
  return printBuilt(flags, total);
}

int buildCommand(const DatasetFlags& flags) {
  if (flags.out.empty()) throw UserError("--out", "a dataset folder is required");
  if (flags.fromSchedules.empty()) return buildFromPrograms(flags);
  if (flags.resume) throw UserError("--resume", "applies to programs that are searched");
  std::vector<dataset::DatasetClassInput> classes;
  std::set<uint64_t> wanted;
  for (const std::string& p : flags.programs) {
    wanted.insert(graph::programHash(search::loadProgramOrBuiltin(p)));
  }
  for (auto& [hash, cls] : schedulesUnder(flags.fromSchedules)) {
    if (wanted.empty() || wanted.count(hash)) classes.push_back(std::move(cls));
  }
  if (classes.empty()) throw UserError(flags.fromSchedules, "holds no matching schedule");
  // Saved schedules need no search: rank 0 alone builds the dataset.
  if (!distributed::isRoot()) return kExitOk;
  dataset::DatasetOptions options;
  options.outDir = flags.out;
  options.archs = codegen::parseArchList(flags.archs);
  options.runOnGpu = flags.run;
  options.chooseGpu = driver::gpuOfThisRank;
  options.threads = flags.threads;
  options.progress = [](const std::string& line) { std::cerr << "dataset: " << line << "\n"; };
  return printBuilt(flags, dataset::buildDataset(classes, options));
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
  sub->add_option("--threads", flags->threads,
                  "threads searching, verifying and generating code (default: all cores)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--time-limit", flags->timeLimit, "search time limit per program, seconds")
      ->check(CLI::NonNegativeNumber);
  sub->add_flag("--run", flags->run, "also measure latency and error on the GPU");
  sub->add_option("--from-schedules", flags->fromSchedules,
                  "take saved schedules from this folder instead of searching");
  sub->add_option("--max-variants", flags->maxVariants, "keep at most N variants per program")
      ->check(CLI::NonNegativeNumber);
  sub->add_flag("--resume", flags->resume,
                "do not search again the programs whose class is already in the dataset (an "
                "interrupted run's finished programs)");
  addSpreadOption(sub, flags->spread, "programs, searched and built");
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
