#include "tools/dim_flags.h"

#include <sstream>

#include "graph/error.h"
#include "verify/equivalence_json.h"

namespace mugraph::tools {

void addDimFlag(CLI::App& command, std::vector<std::string>& dims, const std::string& help) {
  command.add_option("--dim", dims, "NAME=LENGTH of a dynamic dim (repeat for several): " + help)
      ->take_all();
}

graph::DimValues dimValuesFromFlags(const std::vector<std::string>& dims) {
  graph::DimValues values;
  for (const std::string& text : dims) {
    const auto [name, value] = graph::parseDimValue(text, "--dim");
    if (!values.emplace(name, value).second) {
      throw UserError("--dim", "dim '" + name + "' is given twice");
    }
  }
  return values;
}

std::string rangeReportToText(const std::string& title, const verify::RangeReport& report) {
  std::ostringstream out;
  out << title << ": " << (report.equivalent ? "EQUIVALENT" : "NOT EQUIVALENT") << " over "
      << report.lengths.size() << " lengths (verify/README.md, 'Dynamic dims')\n";
  for (const verify::LengthVerdict& v : report.lengths) {
    out << "  " << graph::dimValuesText(v.length.values) << "  ";
    if (!v.unreachable.empty()) {
      out << "NOT REACHABLE: " << v.unreachable << "\n";
      continue;
    }
    out << (v.equivalent ? "EQUIVALENT" : "NOT EQUIVALENT") << ", "
        << verify::levelName(v.report.level) << ", bound " << v.report.falseAcceptBound
        << ", float error " << v.report.maxRelError << "  [" << v.length.why << "]\n";
    if (!v.report.mismatch.empty()) out << "      mismatch: " << v.report.mismatch << "\n";
  }
  return out.str();
}

}  // namespace mugraph::tools
