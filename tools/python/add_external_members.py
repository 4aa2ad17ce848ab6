"""Writes external members of a dataset class: kernels from Triton, CUTLASS and TVM for the class's
program, each in a folder that `mugraph dataset add` takes (dataset/external_member.h).
Generation needs no GPU; `mugraph dataset check DIR --run --record` checks and times them on
one.

    python3 tools/python/add_external_members.py --program schedules/gemm_1024.mg \\
        --family matmul --sources triton,cutlass --out out/members [--dataset DIR]

--family says which kernel implements the program (matmul, gated_mlp, rmsnorm_matmul, lora,
attention); with --dataset the folders are added to that dataset with build/bin/mugraph (or
$MUGRAPH_BINARY). --plant-wrong writes one deliberately wrong Triton member, to test that the
checks catch it.
"""
import argparse
import os
import shlex
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from external.member_folder import write_member  # noqa: E402
from external.program_file import ProgramFile, Tensor  # noqa: E402


def generators(source):
    if source == "triton":
        from external import triton_members
        return triton_members.members
    if source == "cutlass":
        from external import cutlass_members
        return cutlass_members.members
    if source == "tvm":
        from external import tvm_members
        return tvm_members.members
    raise SystemExit(f"unknown source '{source}' (triton, cutlass, tvm)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--program", required=True, help="the class's program (.mg)")
    parser.add_argument("--family", required=True,
                        choices=["matmul", "gated_mlp", "rmsnorm_matmul", "lora", "attention"])
    parser.add_argument("--sources", default="triton", help="comma-separated: triton,cutlass,tvm")
    parser.add_argument("--out", required=True, help="folder for the member folders")
    parser.add_argument("--dataset", help="add the members to this dataset")
    parser.add_argument("--plant-wrong", action="store_true",
                        help="one wrong Triton member (for testing the checks)")
    args = parser.parse_args()
    program = ProgramFile(args.program)
    output_name = program.output_names[0]
    # The command that regenerates the members: this one, less where they were added.
    regenerate, skip_value = [], False
    for arg in sys.argv[1:]:
        if skip_value or arg.startswith("--dataset="):
            skip_value = False
        elif arg == "--dataset":
            skip_value = True
        else:
            regenerate.append(arg)
    command = "python3 tools/python/add_external_members.py " + " ".join(
        shlex.quote(a) for a in regenerate)
    folders = []
    for source in args.sources.split(","):
        for label, kernels, ptx, source_name, text, info, workspace in generators(source)(
                args.family, program, command, **({"plant_wrong": True} if args.plant_wrong else {})):
            output = _output_tensor(program, output_name, args.family)
            folder = os.path.join(args.out, f"{program.name}.{source}.{label}")
            write_member(folder, program, output, kernels, ptx, source_name, text, info,
                         workspace)
            folders.append(folder)
            print(f"wrote {folder}")
    if args.dataset:
        binary = os.environ.get("MUGRAPH_BINARY", "build/bin/mugraph")
        subprocess.run([binary, "dataset", "add", args.dataset] + folders, check=True)


def _output_tensor(program, name, family):
    """The program's output: its shape follows from the family's contraction."""
    inputs = program.inputs
    dtype = inputs[0].dtype
    if family == "attention":
        return Tensor(name, dtype, list(inputs[0].shape))
    if family == "matmul":
        return Tensor(name, dtype, inputs[0].shape[:-1] + [inputs[1].shape[-1]])
    return Tensor(name, dtype, [inputs[0].shape[0], inputs[1].shape[-1]])


if __name__ == "__main__":
    main()
