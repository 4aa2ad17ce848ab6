// The shipped schedules as schedules/shipped.txt lists them, with the facts tests need about
// each: the one list that the codegen tests, the GPU tests and scripts/device_run.sh read.
#pragma once

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace mugraph::testing {

struct ShippedSchedule {
  std::string file;        // in schedules/
  std::string benchCase;   // empty: not benchmarked
  bool sm90Tuned = false;  // tuned for the sm_90 warpgroup path (may spill or not fit on sm_80)
  bool sanitize = false;   // run under compute-sanitizer
};

inline std::string shippedSchedulesFolder() {
  return std::string(MUGRAPH_SOURCE_DIR) + "/schedules";
}

inline std::vector<ShippedSchedule> shippedSchedules() {
  std::ifstream list(shippedSchedulesFolder() + "/shipped.txt");
  if (!list) throw std::runtime_error("cannot read schedules/shipped.txt");
  std::vector<ShippedSchedule> schedules;
  std::string line;
  while (std::getline(list, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream columns(line);
    ShippedSchedule s;
    std::string facts;
    if (!(columns >> s.file >> s.benchCase >> facts)) {
      throw std::runtime_error("schedules/shipped.txt: three columns expected: " + line);
    }
    if (s.benchCase == "-") s.benchCase.clear();
    std::istringstream factList(facts);
    for (std::string fact; std::getline(factList, fact, ',');) {
      if (fact == "sm90_tuned") {
        s.sm90Tuned = true;
      } else if (fact == "sanitize") {
        s.sanitize = true;
      } else if (fact != "-") {
        throw std::runtime_error("schedules/shipped.txt: unknown fact '" + fact + "'");
      }
    }
    schedules.push_back(s);
  }
  return schedules;
}

}  // namespace mugraph::testing
