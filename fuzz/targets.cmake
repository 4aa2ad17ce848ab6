# The fuzz targets, one per reader (fuzz/README.md). Read by fuzz/CMakeLists.txt, which builds
# them, and by fuzz/ctest.cmake, which runs each on its corpus in the test suite.
set(mugraph_fuzz_targets
  program_text
  program_json
  onnx_model
  manifest
  dataset_files
  cost_calibration
)
