# Writes sm90_wgmma_shapes.cuh: one wgmma.mma_async wrapper per row of the table below. Inline
# PTX must name every accumulator register as its own operand (128 of them at N = 256), so the
# wrappers cannot be a template over N; they are printed here instead of written out by hand.
# Contracts of the wrappers: sm90_wgmma.cuh.
# Usage: cmake -DOUTPUT=<file> -P generate_wgmma.cmake
cmake_minimum_required(VERSION 3.22)

# Result widths N of the m64nNk16 multiplies (each thread holds N / 2 f32 accumulators), the
# 16-bit element types, and where A comes from (shared memory by descriptor, or registers:
# the wrapper's name ends in _rs).
set(widths 64 80 96 128 192 256)
set(types f16 bf16)
set(a_sources shared registers)

# The items of ARGN (0, 1, ...) printed with `pattern` (where <i> stands for the item) and
# joined by ", ", with `line_break` in place of the space after every `per_line` of them.
function(join_wrapped out pattern per_line line_break)
  set(text "")
  set(position 0)
  foreach(item IN LISTS ARGN)
    math(EXPR column "${position} % ${per_line}")
    if(position GREATER 0)
      if(column EQUAL 0)
        string(APPEND text ",${line_break}")
      else()
        string(APPEND text ", ")
      endif()
    endif()
    string(REPLACE "<i>" "${item}" printed "${pattern}")
    string(APPEND text "${printed}")
    math(EXPR position "${position} + 1")
  endforeach()
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

function(wrapper width type a_source out)
  math(EXPR accumulators_per_thread "${width} / 2")
  math(EXPR last_accumulator "${accumulators_per_thread} - 1")
  set(indices "")
  foreach(i RANGE ${last_accumulator})
    list(APPEND indices ${i})
  endforeach()
  # The asm string names them %0 .. %(N/2 - 1), sixteen to a source line; the operand list
  # binds each to its accumulator, eight to a line.
  join_wrapped(accumulators "%<i>" 16 " \"\n      \"" ${indices})
  join_wrapped(outputs "\"+f\"(d[<i>])" 8 "\n        " ${indices})
  if(a_source STREQUAL "registers")
    set(suffix "_rs")
    set(scale "1")
    math(EXPR a0 "${accumulators_per_thread}")
    math(EXPR a3 "${accumulators_per_thread} + 3")
    math(EXPR b "${accumulators_per_thread} + 4")
    math(EXPR trans_b "${accumulators_per_thread} + 5")
    set(template "template <int TransB>")
    set(a_param "const unsigned (&a)[4]")
    math(EXPR a1 "${accumulators_per_thread} + 1")
    math(EXPR a2 "${accumulators_per_thread} + 2")
    set(tail "{%${a0}, %${a1}, %${a2}, %${a3}}, %${b}, p, 1, 1, %${trans_b}")
    set(inputs "\"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"l\"(b), \"n\"(TransB)")
  else()
    math(EXPR a "${accumulators_per_thread}")
    math(EXPR b "${accumulators_per_thread} + 1")
    math(EXPR trans_a "${accumulators_per_thread} + 2")
    math(EXPR trans_b "${accumulators_per_thread} + 3")
    math(EXPR scale_d "${accumulators_per_thread} + 4")
    set(suffix "")
    set(template "template <int TransA, int TransB, int ScaleD = 1>")
    set(a_param "unsigned long long a")
    set(scale "%${scale_d}")
    set(tail "%${a}, %${b}, p, 1, 1, %${trans_a}, %${trans_b}")
    set(inputs "\"l\"(a), \"l\"(b), \"n\"(TransA), \"n\"(TransB), \"n\"(ScaleD)")
  endif()
  set(${out}
      "${template}
__device__ __forceinline__ void wgmma_m64n${width}k16${suffix}(float (&d)[${accumulators_per_thread}], ${a_param},
    unsigned long long b, const ${type}*) {
  asm volatile(
      \"{\\n.reg .pred p;\\nsetp.ne.b32 p, ${scale}, 0;\\n\"
      \"wgmma.mma_async.sync.aligned.m64n${width}k16.f32.${type}.${type} {\"
      \"${accumulators}\"
      \"}, ${tail};\\n}\\n\"
      : ${outputs}
      : ${inputs});
}
" PARENT_SCOPE)
endfunction()

set(text "// Generated at build time by codegen/device/generate_wgmma.cmake; do not edit.
#pragma once

namespace mg {

#if !defined(MUGRAPH_HOST_EMULATION) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
")
foreach(a_source IN LISTS a_sources)
  foreach(width IN LISTS widths)
    foreach(type IN LISTS types)
      wrapper(${width} ${type} ${a_source} one)
      string(APPEND text "${one}")
    endforeach()
  endforeach()
endforeach()
string(APPEND text "#endif

}  // namespace mg
")
file(WRITE "${OUTPUT}.tmp" "${text}")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
