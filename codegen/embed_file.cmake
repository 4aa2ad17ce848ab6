# Writes a C++ source holding the text of INPUT as a raw string literal, so the device header
# ships inside the mugraph binary and is never read from disk at run time.
# Usage: cmake -DINPUT=<file> -DOUTPUT=<file.cpp> -DFUNCTION=<name> [-DAPPEND=<file>]
#        -P embed_file.cmake
# APPEND's text follows INPUT's, so one embedded header can be written as several files.
file(READ "${INPUT}" contents)
if(DEFINED APPEND)
  file(READ "${APPEND}" appended)
  string(APPEND contents "\n${appended}")
endif()
get_filename_component(name "${INPUT}" NAME)
file(WRITE "${OUTPUT}.tmp"
  "// Generated at build time from codegen/device/${name}; do not edit.\n"
  "#include \"codegen/device_header.h\"\n\n"
  "namespace mugraph::codegen {\n\n"
  "std::string_view ${FUNCTION}() {\n"
  "  static const char kText[] = R\"mugraph_embedded(${contents})mugraph_embedded\";\n"
  "  return {kText, sizeof(kText) - 1};\n"
  "}\n\n"
  "}  // namespace mugraph::codegen\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
