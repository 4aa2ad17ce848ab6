// A table of malformed program and schedule files, each with where the error must point and
// what it must say. The graph tests load every row through graph::loadFile; the CLI tests run
// the same rows through `mugraph` and expect exit code 2 with the same message.
#pragma once

#include <string>
#include <vector>

namespace mugraph::testing {

struct MalformedCase {
  std::string name;
  std::string fileName;  // the extension picks the reader: ".mg" text, anything else JSON
  std::string contents;
  std::string whereSubstring;  // e.g. ":3" (a line) or "$.kernels[0].ops[1].imap.x"
  std::string reasonSubstring;
};

// Valid files that the JSON rows below change in one place each.
inline const std::string kValidProgramJson = R"({"format": "mugraph.program", "version": 1,
 "name": "mm",
 "inputs": [{"name": "Q", "dtype": "f16", "shape": [2, 64, 32]},
            {"name": "K", "dtype": "f16", "shape": [2, 32, 128], "layout": "row_major"}],
 "ops": [{"op": "matmul", "inputs": ["Q", "K"], "output": "A"}],
 "outputs": ["A"]}
)";

inline const std::string kValidScheduleJson = R"({"format": "mugraph.schedule", "version": 1,
 "name": "mm.split",
 "program": {"format": "mugraph.program", "version": 1, "name": "mm",
   "inputs": [{"name": "Q", "dtype": "f16", "shape": [2, 64, 32]},
              {"name": "K", "dtype": "f16", "shape": [2, 32, 128]}],
   "ops": [{"op": "matmul", "inputs": ["Q", "K"], "output": "A"}],
   "outputs": ["A"]},
 "tensors": [{"name": "Q", "dtype": "f16", "shape": [2, 64, 32], "layout": "row_major"},
             {"name": "K", "dtype": "f16", "shape": [2, 32, 128], "layout": "row_major"},
             {"name": "A", "dtype": "f16", "shape": [2, 64, 128], "layout": "row_major"}],
 "kernels": [
   {"op": "block_graph", "name": "mm", "inputs": ["Q", "K"], "outputs": ["A"],
    "grid": {"x": 2, "y": 2, "z": 1}, "threads": 128, "forloop": 4,
    "ops": [
      {"op": "input", "from": "Q", "output": "q", "imap": {"x": 0, "y": 1}, "fmap": 2},
      {"op": "input", "from": "K", "output": "k", "imap": {"x": 0, "y": -1}, "fmap": 1},
      {"op": "matmul", "inputs": ["q", "k"], "output": "a"},
      {"op": "accum_sum", "inputs": ["a"], "output": "acc"},
      {"op": "output", "inputs": ["acc"], "to": "A", "omap": {"x": 0, "y": 1}}],
    "fusion": []}],
 "outputs": ["A"]}
)";

inline const std::string kValidProgramText =
    "program mm\n"
    "input Q f16 [2, 64, 32]\n"
    "input K f16 [2, 32, 128]\n"
    "A = matmul(Q, K)\n"
    "output A\n";

// `text` with its one occurrence of `from` replaced; a missing `from` yields text that fails
// to parse with a message naming the table's mistake.
inline std::string withChange(const std::string& text, const std::string& from,
                              const std::string& to) {
  const size_t at = text.find(from);
  if (at == std::string::npos) return "table error: '" + from + "' is not in the base text";
  return text.substr(0, at) + to + text.substr(at + from.size());
}

inline std::vector<MalformedCase> malformedCases() {
  const std::string& p = kValidProgramJson;
  const std::string& s = kValidScheduleJson;
  const std::string mg = "input X f32 [4, 8]\ninput Y f16 [4, 8]\n";
  return {
      // .mg program text: every error names the line.
      {"mg_unknown_op", "a.mg", mg + "Z = foo(X)\noutput Z\n", "a.mg:3", "unknown op 'foo'"},
      {"mg_unknown_tensor", "a.mg", mg + "Z = exp(W)\noutput Z\n", ":3", "unknown tensor 'W'"},
      {"mg_duplicate_name", "a.mg", mg + "X = exp(Y)\noutput X\n", ":3",
       "duplicate tensor name 'X' (first defined on line 1)"},
      {"mg_bad_dtype", "a.mg", "input X f64 [4]\n", ":1", "unknown dtype 'f64'"},
      {"mg_zero_dim", "a.mg", "input X f32 [4, 0]\n", ":1", "dim 1 of 'X' must be an integer"},
      {"mg_negative_dim", "a.mg", "input X f32 [-3]\n", ":1", "got '-3'"},
      {"mg_fractional_dim", "a.mg", "input X f32 [2.5]\n", ":1", "got '2.5'"},
      {"mg_rank_5", "a.mg", "input X f32 [1, 2, 3, 4, 5]\n", ":1", "rank 5 (1 to 4 supported)"},
      {"mg_bad_layout", "a.mg", "input X f32 [4, 4] layout=column_major\n", ":1",
       "unknown layout 'column_major'"},
      {"mg_missing_paren", "a.mg", mg + "Z = exp(X\noutput Z\n", ":3", "missing ')'"},
      {"mg_trailing_garbage", "a.mg", mg + "Z = exp(X) extra\noutput Z\n", ":3",
       "unexpected 'extra' after the statement"},
      {"mg_unknown_keyword", "a.mg", mg + "Z = reduce_sum(X, dims=1)\noutput Z\n", ":3",
       "unknown keyword 'dims'"},
      {"mg_missing_dim", "a.mg", mg + "Z = reduce_sum(X)\noutput Z\n", ":3",
       "reduce_sum needs dim="},
      {"mg_attr_on_wrong_op", "a.mg", mg + "Z = exp(X, dim=1)\noutput Z\n", ":3",
       "exp takes no 'dim='"},
      {"mg_no_output", "a.mg", mg + "Z = exp(X)\n", ":3", "no 'output' statement"},
      {"mg_forward_reference", "a.mg", mg + "A = exp(B)\nB = exp(X)\noutput A\n", ":3",
       "used before it is defined"},
      {"mg_dtype_mismatch_add", "a.mg", mg + "Z = add(X, Y)\noutput Z\n", ":3",
       "dtype mismatch: 'X' is f32, 'Y' is f16"},
      {"mg_no_broadcast", "a.mg", "input X f32 [4, 8]\ninput Y f32 [4, 3]\nZ = mul(X, Y)\n", ":3",
       "dim 1 does not broadcast"},
      {"mg_dim_out_of_range", "a.mg", mg + "Z = reduce_max(X, dim=3)\noutput Z\n", ":3",
       "dim=3 is out of range for rank 2 tensor 'X'"},
      {"mg_to_not_dividing", "a.mg", mg + "Z = reduce_sum(X, dim=1, to=3)\noutput Z\n", ":3",
       "to=3 does not divide dim 1 of 'X'"},
      {"mg_accumulator_in_program", "a.mg", mg + "Z = accum_sum(X)\noutput Z\n", ":3",
       "'accum_sum' is not a program op"},
      {"mg_output_twice", "a.mg", mg + "Z = exp(X)\noutput Z\noutput Z\n", ":5",
       "output twice (first on line 4)"},
      {"mg_matmul_contraction", "a.mg", mg + "Z = matmul(X, X)\noutput Z\n", ":3",
       "contraction dims differ"},
      {"mg_scale_without_c", "a.mg", mg + "Z = scale(X)\noutput Z\n", ":3", "scale needs c="},
      {"mg_add_scalar_without_c", "a.mg", mg + "Z = add_scalar(X)\noutput Z\n", ":3",
       "add_scalar needs c="},
      {"mg_add_scalar_c_overflow", "a.mg", mg + "Z = add_scalar(X, c=1e400)\noutput Z\n", ":3",
       "c= must be a number"},
      {"mg_sigmoid_with_c", "a.mg", mg + "Z = sigmoid(X, c=2)\noutput Z\n", ":3",
       "sigmoid takes no 'c='"},
      {"mg_transposed_rank_1", "a.mg", "input X f32 [4] layout=transposed\n", ":1",
       "transposed but has rank 1"},

      // Program JSON: every error names the JSON path.
      {"json_truncated", "p.json", p.substr(0, p.size() / 2), "p.json:", "invalid JSON"},
      {"json_number_overflow", "p.json", withChange(p, "[2, 64, 32]", "[2, 64, 1e400]"), "p.json",
       "number overflow parsing '1e400'"},
      {"json_huge_integer", "p.json", withChange(p, "[2, 64, 32]", "[2, 64, 18446744073709551615]"),
       "$.inputs[0].shape[2]", "expected an integer in 1..2147483647"},
      {"json_not_an_object", "p.json", "[1, 2]", "$", "expected a JSON object"},
      {"json_unknown_version", "p.json", withChange(p, "\"version\": 1", "\"version\": 7"),
       "$.version", "unsupported program version 7; this mugraph reads version 1"},
      {"json_unknown_format", "p.json", withChange(p, "mugraph.program", "mugraph.graph"),
       "$.format", "unknown format 'mugraph.graph'"},
      {"json_shape_as_string", "p.json", withChange(p, "[2, 64, 32]", "\"2, 64, 32\""),
       "$.inputs[0].shape", "expected an array, got a string"},
      {"json_scale_constant_as_string", "p.json",
       withChange(withChange(p, "\"matmul\"", "\"scale\""), "[\"Q\", \"K\"], \"output\": \"A\"",
                  "[\"Q\"], \"output\": \"A\", \"c\": \"0.5\""),
       "$.ops[0].c", "expected a number, got a string"},
      {"json_fractional_dim", "p.json", withChange(p, "[2, 64, 32]", "[2, 64.5, 32]"),
       "$.inputs[0].shape[1]", "expected an integer"},
      {"json_zero_dim", "p.json", withChange(p, "[2, 64, 32]", "[2, 0, 32]"),
       "$.inputs[0].shape[1]", "got 0"},
      {"json_rank_5", "p.json", withChange(p, "[2, 64, 32]", "[1, 1, 2, 64, 32]"),
       "$.inputs[0].shape", "rank 5"},
      {"json_bad_layout", "p.json", withChange(p, "\"row_major\"", "\"col_major\""),
       "$.inputs[1].layout", "unknown layout 'col_major'"},
      {"json_bad_dtype", "p.json", withChange(p, "\"f16\"", "\"fp16\""), "$.inputs[0].dtype",
       "unknown dtype 'fp16'"},
      {"json_unknown_op", "p.json", withChange(p, "\"matmul\"", "\"conv\""), "$.ops[0].op",
       "unknown op 'conv'"},
      {"json_unknown_key", "p.json",
       withChange(p, "\"output\": \"A\"", "\"output\": \"A\", \"x\": 1"), "$.ops[0].x",
       "unknown key 'x'"},
      {"json_attr_not_taken", "p.json",
       withChange(p, "\"output\": \"A\"", "\"output\": \"A\", \"dim\": 1"), "$.ops[0].dim",
       "takes no attribute 'dim'"},
      {"json_missing_tensor", "p.json", withChange(p, "[\"Q\", \"K\"]", "[\"Q\", \"V\"]"),
       "$.ops[0].inputs[1]", "unknown tensor 'V'"},
      {"json_duplicate_tensor", "p.json", withChange(p, "\"name\": \"K\"", "\"name\": \"Q\""),
       "$.inputs[1].name", "duplicate tensor name 'Q'"},
      {"json_dtype_mismatch", "p.json",
       withChange(p, "{\"name\": \"K\", \"dtype\": \"f16\"",
                  "{\"name\": \"K\", \"dtype\": \"f32\""),
       "$.ops[0]", "dtype mismatch: 'Q' is f16, 'K' is f32"},
      {"json_cycle", "p.json", withChange(p, "[\"Q\", \"K\"]", "[\"Q\", \"A\"]"),
       "$.ops[0].inputs[1]", "forward reference or cycle"},
      {"json_program_hash_mismatch", "p.json",
       withChange(p, "\"name\": \"mm\"", "\"name\": \"mm\", \"hash\": \"0123456789abcdef\""),
       "$.hash", "the file says 0123456789abcdef but its content hashes to"},

      // Schedule JSON.
      {"sched_unknown_version", "s.json", withChange(s, "\"version\": 1", "\"version\": 2"),
       "$.version", "unsupported schedule version 2; this mugraph reads version 1"},
      {"sched_unknown_top_level_key", "s.json", withChange(s, "\"kernels\"", "\"kernelz\""),
       "$.kernelz", "unknown key 'kernelz'"},
      {"sched_missing_key", "s.json", withChange(s, "\"to\": \"A\", ", ""), "$.kernels[0].ops[4]",
       "missing key 'to'"},
      {"sched_grid_leaves_last_part_empty", "s.json", withChange(s, "\"y\": 2", "\"y\": 48"),
       "$.kernels[0].ops[0].imap.y", "grid.y=48 leaves the last part of dim 1 of 'Q' (size 64) empty"},
      {"sched_cluster_does_not_divide_grid", "s.json",
       withChange(s, "\"threads\": 128", "\"cluster\": {\"x\": 1, \"y\": 3}, \"threads\": 128"),
       "$.kernels[0].cluster.y", "cluster.y is 3 (must be >= 1 and divide grid.y, 2)"},
      {"sched_forloop_leaves_last_iteration_empty", "s.json",
       withChange(s, "\"forloop\": 4", "\"forloop\": 12"), "$.kernels[0].ops[0].fmap",
       "forloop=12 leaves the last iteration over dim 2 of 'Q' (size 32) empty"},
      {"sched_declared_tile_needs_other_part_count", "s.json",
       withChange(s, "\"fmap\": 2}", "\"fmap\": 2, \"tile\": [1, 16, 8]}"),
       "$.kernels[0].ops[0].tile", "tile 16 of dim 1 of 'Q' (size 64) needs 4 parts, but grid.y is 2"},
      {"sched_declared_tile_of_wrong_rank", "s.json",
       withChange(s, "\"fmap\": 2}", "\"fmap\": 2, \"tile\": [1, 32]}"),
       "$.kernels[0].ops[0].tile", "tile [1, 32] has rank 2 but 'Q' has rank 3"},
      {"sched_grid_axis_without_output_dim", "s.json",
       withChange(s, "\"omap\": {\"x\": 0, \"y\": 1}", "\"omap\": {\"x\": 0}"),
       "$.kernels[0].ops[4].omap.y", "grid.y=2 has no output dim for 'acc'"},
      {"sched_imap_on_unit_axis", "s.json",
       withChange(s, "{\"x\": 0, \"y\": 1}, \"fmap\"", "{\"x\": 0, \"y\": 1, \"z\": 0}, \"fmap\""),
       "$.kernels[0].ops[0].imap.z", "grid.z is 1"},
      {"sched_output_written_twice", "s.json",
       withChange(s, "\"omap\": {\"x\": 0, \"y\": 1}}]",
                  "\"omap\": {\"x\": 0, \"y\": 1}}, "
                  "{\"op\": \"output\", \"inputs\": [\"acc\"], \"to\": \"A\", \"omap\": {\"x\": 0, "
                  "\"y\": 1}}]"),
       "$.kernels[0].ops[5].to", "kernel output 'A' is written twice"},
      {"sched_kernel_output_never_written", "s.json",
       withChange(withChange(s, "\"outputs\": [\"A\"],\n    \"grid\"",
                             "\"outputs\": [\"A\", \"B\"],\n    \"grid\""),
                  "[2, 64, 128], \"layout\": \"row_major\"}]",
                  "[2, 64, 128], \"layout\": \"row_major\"}, {\"name\": \"B\", \"dtype\": \"f16\", "
                  "\"shape\": [2]}]"),
       "$.kernels[0].outputs", "kernel output 'B' is never written"},
      {"sched_output_not_program_output", "s.json",
       withChange(s, "],\n \"outputs\": [\"A\"]", "],\n \"outputs\": [\"Q\"]"), "$.outputs[0]",
       "schedule output 'Q' is not an output of the program"},
      {"sched_output_dtype_differs", "s.json",
       withChange(s, "\"A\", \"dtype\": \"f16\"", "\"A\", \"dtype\": \"f32\""), "$.outputs[0]",
       "schedule output 'A' is f32 [2, 64, 128] but the program's is f16"},
      {"sched_input_differs_from_program", "s.json",
       withChange(s, "[2, 64, 32], \"layout\": \"row_major\"",
                  "[2, 64, 32], \"layout\": \"transposed\""),
       "$.tensors[0]", "schedule input 'Q' differs from program input 0"},
      {"sched_hash_mismatch", "s.json",
       withChange(s, "\"name\": \"mm.split\"",
                  "\"name\": \"mm.split\", \"hash\": \"0000000000000000\""),
       "$.hash", "hash mismatch: the file says 0000000000000000"},
      {"sched_occupancy_over_the_threads_of_a_multiprocessor", "s.json",
       withChange(s, "\"threads\": 128", "\"threads\": 128, \"occupancy\": 17"),
       "$.kernels[0].occupancy", "occupancy is 17 (at least 1, and at most 2048 threads"},
      {"sched_occupancy_zero", "s.json",
       withChange(s, "\"threads\": 128", "\"threads\": 128, \"occupancy\": 0"),
       "$.kernels[0].occupancy", "expected an integer in 1..64, got 0"},
      {"sched_threads_not_multiple_of_32", "s.json",
       withChange(s, "\"threads\": 128", "\"threads\": 100"), "$.kernels[0].threads",
       "threads is 100 (a multiple of 32"},
      {"sched_grid_y_beyond_cuda", "s.json", withChange(s, "\"y\": 2", "\"y\": 65536"),
       "$.kernels[0].grid.y", "expected an integer in 1..65535, got an integer (65536)"},
      {"sched_negative_grid", "s.json", withChange(s, "\"x\": 2", "\"x\": -2"),
       "$.kernels[0].grid.x", "got -2"},
      {"sched_grid_as_string", "s.json", withChange(s, "\"x\": 2", "\"x\": \"2\""),
       "$.kernels[0].grid.x", "expected an integer in 1..2147483647, got a string"},
      {"sched_unknown_kernel_key", "s.json",
       withChange(s, "\"threads\": 128", "\"threads\": 128, \"warps\": 4"), "$.kernels[0].warps",
       "unknown key 'warps'"},
      {"sched_unknown_block_op", "s.json", withChange(s, "\"accum_sum\"", "\"accum_mean\""),
       "$.kernels[0].ops[3].op", "unknown op 'accum_mean'"},
      {"sched_mixing_phases", "s.json",
       withChange(s, "\"output\": \"acc\"}",
                  "\"output\": \"acc\"}, {\"op\": \"add\", \"inputs\": [\"acc\", \"a\"], "
                  "\"output\": \"m\"}"),
       "$.kernels[0].ops[4].inputs",
       "add mixes per-iteration tile 'a' with accumulated tile 'acc'"},
      {"sched_output_without_accumulator", "s.json",
       withChange(s, "\"inputs\": [\"acc\"], \"to\"", "\"inputs\": [\"a\"], \"to\""),
       "$.kernels[0].ops[4].inputs", "must come after an accumulator"},
      {"sched_kernel_cycle", "s.json",
       withChange(s, "\"inputs\": [\"Q\", \"K\"], \"outputs\"",
                  "\"inputs\": [\"Q\", \"K\", \"A\"], \"outputs\""),
       "$.kernels[0].inputs[2]", "forward reference or cycle"},
      {"sched_tile_forward_reference", "s.json",
       withChange(s, "[\"q\", \"k\"]", "[\"q\", \"acc\"]"), "$.kernels[0].ops[2].inputs[1]",
       "tile 'acc' is used before it is defined"},
      {"sched_unknown_from", "s.json", withChange(s, "\"from\": \"K\"", "\"from\": \"V\""),
       "$.kernels[0].ops[1].from", "'V' is not one of this kernel's inputs"},
      {"sched_duplicate_tensor", "s.json",
       withChange(s, "{\"name\": \"A\", \"dtype\"", "{\"name\": \"K\", \"dtype\""),
       "$.tensors[2].name", "duplicate tensor 'K'"},
      {"sched_orphan_tensor", "s.json",
       withChange(s, "[2, 64, 128], \"layout\": \"row_major\"}]",
                  "[2, 64, 128], \"layout\": \"row_major\"}, {\"name\": \"B\", \"dtype\": \"f16\", "
                  "\"shape\": [2]}]"),
       "$.tensors[3]", "neither a program input nor written by any kernel"},
      {"sched_program_input_not_listed", "s.json",
       withChange(s,
                  "{\"name\": \"K\", \"dtype\": \"f16\", \"shape\": [2, 32, 128], \"layout\": "
                  "\"row_major\"},",
                  ""),
       "$.tensors", "program input 'K' is not listed in tensors"},
      {"sched_bad_program", "s.json",
       withChange(s, "\"outputs\": [\"A\"]},", "\"outputs\": [\"B\"]},"), "$.program.outputs[0]",
       "unknown tensor 'B'"},
  };
}

}  // namespace mugraph::testing
