"""Writes one external member's folder (dataset/external_member.h): member.json, program.mg,
the kernel's source, its PTX and a manifest.json in mugraph's manifest format (codegen/
README.md), so `mugraph dataset add`, `mugraph dataset check --run` and mugraph_launch.py
launch it like any of mugraph's own variants."""
import json
import os
import shutil

WORKSPACE_ALIGNMENT = 256  # codegen/kernel_abi.h: workspace tensors start 256-byte aligned


class Kernel:
    """One launch: entry name, grid, block, dynamic shared memory and its parameters in order,
    each ("tensor name", "read" | "write")."""

    def __init__(self, entry, grid, block, shared, params):
        self.entry, self.grid, self.block, self.shared, self.params = (entry, list(grid),
                                                                       list(block), shared,
                                                                       params)


def tensor_json(tensor, role):
    return {"name": tensor.name, "role": role, "dtype": tensor.dtype, "shape": tensor.shape,
            "layout": tensor.layout, "stored_shape": tensor.storage_shape(),
            "bytes": tensor.bytes}


def write_member(folder, program, output, kernels, ptx, source_name, source_text, source,
                 workspace=()):
    """`program` a ProgramFile; `output` the Tensor of its output; `workspace` Tensors the
    kernels take besides the program's (compiler scratch), each placed in the workspace."""
    if os.path.exists(folder):
        shutil.rmtree(folder)
    os.makedirs(folder)
    tensors = [tensor_json(t, "input") for t in program.inputs]
    tensors.append(tensor_json(output, "output"))
    offset = 0
    for t in workspace:
        entry = tensor_json(t, "workspace")
        entry["offset"] = offset
        tensors.append(entry)
        offset += (t.bytes + WORKSPACE_ALIGNMENT - 1) // WORKSPACE_ALIGNMENT * WORKSPACE_ALIGNMENT
    by_name = {t["name"]: t for t in tensors}
    kernel_list = []
    for k in kernels:
        params = []
        for name, access in k.params:
            t = by_name[name]
            params.append({"tensor": name, "role": t["role"], "dtype": t["dtype"],
                           "shape": t["shape"], "layout": t["layout"], "bytes": t["bytes"],
                           "access": access, "kind": "pointer"})
        kernel_list.append({"entry": k.entry, "grid": k.grid, "block": k.block,
                            "dynamic_shared_bytes": k.shared, "params": params})
    manifest = {"format": "mugraph.manifest", "version": 1,
                "schedule": f"{source['compiler']} {source_name}",
                "schedule_hash": "external", "source": source_name,
                "ptx": {"sm_90": "sm_90.ptx"}, "tensors": tensors, "workspace_bytes": offset,
                "kernels": kernel_list}
    member = {"format": "mugraph.external_member", "version": 1,
              "source": dict(source, file=source_name)}
    files = {"manifest.json": json.dumps(manifest, indent=2) + "\n",
             "member.json": json.dumps(member, indent=2) + "\n",
             "program.mg": program.text, "sm_90.ptx": ptx, source_name: source_text}
    for name, text in files.items():
        with open(os.path.join(folder, name), "w") as f:
            f.write(text)
    return folder
