// JSON forms of programs ("mugraph.program") and schedules ("mugraph.schedule"), version 1.
// Everything is spelled by name, never by numeric enum. Reading validates everything and
// reports the JSON path of the first problem ("gqa.json: $.kernels[0].ops[3].imap.x: ...").
// The format is documented in schedules/README.md.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "graph/ir.h"

namespace mugraph::graph {

inline constexpr int kFormatVersion = 1;
inline constexpr const char* kProgramFormat = "mugraph.program";
inline constexpr const char* kScheduleFormat = "mugraph.schedule";

nlohmann::json programToJson(const Program& program);
// `path` is where `json` sits in its document ("$" at the top, "$.program" inside a schedule).
Program programFromJson(const nlohmann::json& json, const std::string& sourceName,
                        const std::string& path = "$");

nlohmann::json scheduleToJson(const Schedule& schedule);
Schedule scheduleFromJson(const nlohmann::json& json, const std::string& sourceName);

}  // namespace mugraph::graph
