// Times the search on every built-in program: search seconds, states, pruned by reason,
// candidates, verified variants, and the process's peak resident memory (getrusage), as a
// table and as JSON. Each program runs in a child process so peak memory is its own.
//
//   build/bin/search_bench [--out bench_search.json] [--threads N] [--programs a,b,...]
//                          [--found DIR]   (also saves each program's best variant there)
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "graph/files.h"
#include "graph/hash.h"
#include "search/builtin_programs.h"
#include "search/superoptimize.h"

namespace {

using mugraph::search::pruneCountsByName;

// Runs one search in this (child) process and returns its row as JSON text.
nlohmann::json benchOne(const std::string& name, int threads, const std::string& foundDir) {
  const mugraph::graph::Program program = *mugraph::search::builtinProgram(name);
  mugraph::search::SearchOptions options;
  options.config = mugraph::search::defaultConfig(mugraph::search::classifyProgram(program));
  options.threads = threads;
  options.progress = false;
  const mugraph::search::SearchResult result = mugraph::search::superoptimize(program, options);
  if (!foundDir.empty() && !result.variants.empty()) {
    const mugraph::search::VerifiedVariant& best = result.variants[0];
    mugraph::graph::saveSchedule(foundDir + "/" + name + "." + best.name + ".json", best.schedule);
  }
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const mugraph::search::SearchSummary& s = result.summary;
  uint64_t pruned = 0;
  for (uint64_t n : s.stats.pruned) pruned += n;
  bool splitKv = false;
  for (const auto& v : result.variants) {
    for (const auto& op : v.schedule.graph.ops) {
      for (mugraph::graph::TensorId t : op.outputs) {
        splitKv = splitKv || v.schedule.graph.tensors[t].name.find("_part") != std::string::npos;
      }
    }
  }
  return {{"program", name},
          {"seconds", s.seconds},
          {"states", s.stats.states},
          {"pruned", pruned},
          {"pruned_by_reason", pruneCountsByName(s.stats.pruned)},
          {"candidates", s.candidates},
          {"verified", s.verified},
          {"rejected", s.rejected},
          {"has_grid_split_reduction", splitKv},
          {"best_cost_us", result.variants.empty() ? 0.0 : result.variants[0].cost.microseconds},
          {"best", result.variants.empty() ? "" : result.variants[0].name},
          {"oracle_z3_queries", s.oracle.z3Queries},
          {"peak_rss_mib", static_cast<double>(usage.ru_maxrss) / 1024.0},
          {"threads", threads}};
}

}  // namespace

int main(int argc, char** argv) {
  std::string outPath = "bench_search.json";
  int threads = 0;
  std::string foundDir;
  std::vector<std::string> programs;
  for (const auto& p : mugraph::search::builtinPrograms()) programs.push_back(p.name);
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--out") {
      outPath = argv[i + 1];
    } else if (flag == "--threads") {
      threads = std::stoi(argv[i + 1]);
    } else if (flag == "--found") {
      foundDir = argv[i + 1];
    } else if (flag == "--programs") {
      programs.clear();
      std::stringstream list(argv[i + 1]);
      for (std::string name; std::getline(list, name, ',');) programs.push_back(name);
    }
  }
  nlohmann::json rows = nlohmann::json::array();
  std::printf("%-16s %9s %10s %10s %11s %9s %10s %9s\n", "program", "seconds", "states", "pruned",
              "candidates", "verified", "split", "peak MiB");
  for (const std::string& name : programs) {
    if (!mugraph::search::builtinProgram(name)) {
      std::fprintf(stderr, "search_bench: unknown program '%s'\n", name.c_str());
      return 2;
    }
    int pipe[2];
    if (::pipe(pipe) != 0) return 3;
    const pid_t child = fork();
    if (child == 0) {
      ::close(pipe[0]);
      const std::string text = benchOne(name, threads, foundDir).dump();
      if (::write(pipe[1], text.data(), text.size()) < 0) _exit(3);
      _exit(0);
    }
    ::close(pipe[1]);
    std::string text;
    char buffer[4096];
    for (ssize_t n; (n = ::read(pipe[0], buffer, sizeof buffer)) > 0;) text.append(buffer, n);
    ::close(pipe[0]);
    int status = 0;
    waitpid(child, &status, 0);
    if (text.empty()) {
      std::fprintf(stderr, "search_bench: %s failed\n", name.c_str());
      return 3;
    }
    const nlohmann::json row = nlohmann::json::parse(text);
    std::printf("%-16s %9.1f %10llu %10llu %11llu %9llu %10s %9.0f\n", name.c_str(),
                row["seconds"].get<double>(), row["states"].get<unsigned long long>(),
                row["pruned"].get<unsigned long long>(),
                row["candidates"].get<unsigned long long>(),
                row["verified"].get<unsigned long long>(),
                row["has_grid_split_reduction"].get<bool>() ? "yes" : "no",
                row["peak_rss_mib"].get<double>());
    std::cout.flush();
    rows.push_back(row);
  }
  std::ofstream(outPath) << nlohmann::json{{"results", rows}}.dump(2) << "\n";
  std::printf("wrote %s\n", outPath.c_str());
  return 0;
}
