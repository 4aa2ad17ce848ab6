// Reading and writing program and schedule files. A file is a program (.mg text, or JSON
// with "format": "mugraph.program") or a schedule (JSON, "format": "mugraph.schedule").
// Every problem is a UserError naming the file and the line or JSON path. Writes are atomic:
// a temp file in the same folder, then rename, so no reader ever sees half a file.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "graph/ir.h"

namespace mugraph::graph {

struct LoadedFile {
  Program program;                  // the schedule's program, for a schedule
  std::optional<Schedule> schedule;  // set for a schedule file
};

LoadedFile loadFile(const std::string& path);
Program loadProgram(const std::string& path);    // a program, or the program of a schedule
Schedule loadSchedule(const std::string& path);  // UserError if the file is not a schedule

std::string readFileText(const std::string& path);  // UserError if unreadable
void writeFileAtomic(const std::string& path, std::string_view contents);

void saveProgram(const std::string& path, const Program& program);  // .mg text, else JSON
void saveSchedule(const std::string& path, const Schedule& schedule);

}  // namespace mugraph::graph
