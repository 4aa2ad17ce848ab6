/* The C API of mugraph: what a framework binding (python/mugraph, through ctypes) calls in
 * process. C, so that any language and any Python version can load it; JSON in and out, so
 * the schemas stay those of the files (onnx_import/README.md, codegen/README.md).
 *
 * Every function that can fail returns MG_OK or an error code and leaves the reason in
 * mg_last_error() (per thread). Strings this library returns are freed with mg_free_string. */
#ifndef MUGRAPH_CAPI_H
#define MUGRAPH_CAPI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(MUGRAPH_CAPI_BUILD)
#define MG_API __attribute__((visibility("default")))
#else
#define MG_API
#endif

enum { MG_OK = 0, MG_USER_ERROR = 2, MG_INTERNAL_ERROR = 3 };

/* "mugraph <version>", the version cache keys carry. */
MG_API const char* mg_version(void);

/* The reason of the calling thread's last failure ("" when none). */
MG_API const char* mg_last_error(void);

MG_API void mg_free_string(char* text);

/* Partitions a model graph (format "mugraph.graph", onnx_import/graph_json.h) with the ONNX
 * front end's partitioner and op mapping; *result is {"subgraphs": [...], "unsupported":
 * [...]} in the schema of superoptimize's summary.json. */
MG_API int mg_partition(const char* graph_json, char** result);

/* A variant directory (manifest.json and PTX, as `mugraph superoptimize` writes it) loaded on
 * the current device's primary context: the context PyTorch uses. */
typedef struct mg_variant mg_variant;
MG_API int mg_variant_open(const char* dir, mg_variant** variant);
MG_API void mg_variant_close(mg_variant* variant);

/* {"schedule", "arch", "workspace_bytes", "dims", "tensors": [{"name", "role", "dtype", "shape",
 * "layout", "bytes"}]}: the inputs, then the outputs, in the order mg_variant_launch takes.
 * A variant whose kernels take the lengths of dynamic dims lists them in "dims" ({"name", "min",
 * "max"}, the order mg_variant_launch_dims takes lengths in); its tensors' "shape" and "bytes"
 * are at the last launch's lengths (at first each dim's max), and a tensor with a dynamic dim
 * has "shape_dims": per dim the dim's name, or "" where static. */
MG_API int mg_variant_describe(const mg_variant* variant, char** result);

/* Launches every kernel of the variant on `stream` (a CUstream; 0 the legacy default
 * stream), asynchronously: `tensors` holds `count` device addresses in the order
 * mg_variant_describe lists, `workspace` at least workspace_bytes (may be 0 when that is 0).
 * Capturable into a CUDA graph. */
MG_API int mg_variant_launch(mg_variant* variant, const uint64_t* tensors, size_t count,
                             uint64_t workspace, void* stream);

/* mg_variant_launch at run-time lengths: `lengths` holds one per dim of "dims", in its order,
 * each inside its range; the tensors' sizes, the grids and the kernels' length arguments
 * follow them. A variant without dims takes dim_count 0. */
MG_API int mg_variant_launch_dims(mg_variant* variant, const uint64_t* tensors, size_t count,
                                  const int64_t* lengths, size_t dim_count, uint64_t workspace,
                                  void* stream);

#ifdef __cplusplus
}
#endif

#endif
