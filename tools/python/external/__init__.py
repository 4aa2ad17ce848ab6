"""External members of mugraph dataset classes: kernels written by other compilers (Triton,
CUTLASS, TVM) for a class's program, each in a folder `mugraph dataset add` takes
(dataset/external_member.h describes the folder)."""
