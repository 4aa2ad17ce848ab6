"""The inputs and outputs of a program text file (.mg; schedules/README.md): what an external
member's manifest must bind. Only the declarations are read; mugraph itself parses the whole
program when the member is added, and rejects a manifest that does not match it."""
import re

_DTYPE_BYTES = {"f16": 2, "bf16": 2, "f32": 4}
_INPUT = re.compile(r"^input\s+(\w+)\s+(\w+)\s+\[([\d,\s]+)\](?:\s+layout=(\w+))?\s*$")


class Tensor:
    def __init__(self, name, dtype, shape, layout="row_major"):
        self.name, self.dtype, self.shape, self.layout = name, dtype, shape, layout

    @property
    def bytes(self):
        count = 1
        for extent in self.shape:
            count *= extent
        return count * _DTYPE_BYTES[self.dtype]

    def storage_shape(self):
        """The shape as stored (graph::storedShape): transposed swaps the last two dims,
        heads_transposed the two before the last."""
        shape = list(self.shape)
        if self.layout == "transposed":
            shape[-1], shape[-2] = shape[-2], shape[-1]
        elif self.layout == "heads_transposed":
            shape[-2], shape[-3] = shape[-3], shape[-2]
        return shape


class ProgramFile:
    def __init__(self, path):
        self.path = path
        with open(path) as f:
            self.text = f.read()
        self.name = None
        self.inputs = []
        output_names = []
        for line in self.text.splitlines():
            line = line.split("#", 1)[0].strip()
            if line.startswith("program "):
                self.name = line.split()[1]
            elif line.startswith("input "):
                match = _INPUT.match(line)
                if not match:
                    raise ValueError(f"{path}: cannot read the input declaration '{line}'")
                name, dtype, shape, layout = match.groups()
                self.inputs.append(Tensor(name, dtype, [int(s) for s in shape.split(",")],
                                          layout or "row_major"))
            elif line.startswith("output "):
                output_names.append(line.split()[1])
        if not self.name or not self.inputs or not output_names:
            raise ValueError(f"{path}: expected a program name, inputs and outputs")
        self.output_names = output_names

    def input(self, name):
        for t in self.inputs:
            if t.name == name:
                return t
        raise KeyError(f"{self.path}: no input {name}")
