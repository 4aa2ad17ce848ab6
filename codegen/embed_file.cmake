# Writes a C++ source that holds the text of each file of INPUTS (a "|"-separated list) as a raw
# string literal, so the device headers ship inside the mugraph binary and are never read from
# disk at run time. Each is listed under its file name, the name `#include` uses for it.
# Usage: cmake -DINPUTS=<file>|<file>... -DOUTPUT=<file.cpp> -P embed_file.cmake
string(REPLACE "|" ";" inputs "${INPUTS}")
set(literals "")
set(entries "")
set(index 0)
foreach(input IN LISTS inputs)
  file(READ "${input}" contents)
  get_filename_component(name "${input}" NAME)
  string(APPEND literals
         "const char kText${index}[] = R\"mugraph_embedded(${contents})mugraph_embedded\";\n")
  string(APPEND entries "      {\"${name}\", {kText${index}, sizeof(kText${index}) - 1}},\n")
  math(EXPR index "${index} + 1")
endforeach()
file(WRITE "${OUTPUT}.tmp"
  "// Generated at build time from the headers of codegen/device/; do not edit.\n"
  "#include \"codegen/device_header.h\"\n\n"
  "namespace mugraph::codegen {\n\n"
  "namespace {\n\n"
  "${literals}\n"
  "}  // namespace\n\n"
  "std::span<const DeviceHeader> deviceHeaders() {\n"
  "  static const DeviceHeader kHeaders[] = {\n"
  "${entries}"
  "  };\n"
  "  return kHeaders;\n"
  "}\n\n"
  "}  // namespace mugraph::codegen\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
