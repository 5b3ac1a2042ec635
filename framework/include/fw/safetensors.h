/*
 * fw/safetensors.h - read and write the safetensors format.
 *
 * File layout: 8-byte little-endian header length N, N bytes of UTF-8 JSON
 * (an object: tensor name -> {"dtype", "shape", "data_offsets": [begin, end]},
 * plus an optional "__metadata__" string -> string map), then the data
 * section; offsets are relative to the data section.
 *
 * Loading maps the file read-only (mmap) and validates everything before
 * returning, following the reference implementation (huggingface/safetensors):
 * header length at most FW_SAFETENSORS_MAX_HEADER and inside the file, the
 * header valid UTF-8 and a strict JSON object, no duplicate names, known
 * dtypes, shape x dtype size equal to each offsets span, offsets in bounds,
 * contiguous (sorted by begin, each begins where the previous ends, the
 * first at 0) and covering the data section exactly. Each kind of bad file
 * fails with its own fw_st_error (fw_safetensors_error_kind()) and a message
 * naming the tensor.
 *
 * Ownership: an fw_safetensors holds a reference on its mapping; names,
 * shapes and data pointers it returns are borrowed until
 * fw_safetensors_close(). fw_safetensors_tensor() COPIES the bytes into a
 * new tensor. fw_safetensors_tensor_view() borrows the mapping without a
 * copy and takes a reference on it, so the view stays valid after close; the
 * file is unmapped when the file object and its last view are gone. The
 * mapping is private: writing to a view changes memory, never the file.
 * (As with any mmap, truncating the file while it is mapped is the
 * caller's SIGBUS.)
 *
 * Threads: a loaded file is read-only and may be read from many threads.
 * Out of memory: FW_ENOMEM, nothing is left half-built.
 */
/* API-STABLE */
#ifndef FW_SAFETENSORS_H
#define FW_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "fw/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The reference implementation's header bound: 100,000,000 bytes. */
#define FW_SAFETENSORS_MAX_HEADER 100000000ull

/* What was wrong with a file (the last failure on this thread). */
typedef enum {
    FW_ST_OK = 0,
    FW_ST_EIO,               /* open/stat/mmap/write failed (FW_EIO) */
    FW_ST_ETRUNCATED,        /* under 8 bytes, or the header runs past the end */
    FW_ST_EHEADER_TOO_LARGE, /* header length over FW_SAFETENSORS_MAX_HEADER */
    FW_ST_EUTF8,             /* header is not valid UTF-8 */
    FW_ST_EJSON,             /* header is not a valid JSON object */
    FW_ST_EENTRY,            /* an entry lacks dtype/shape/data_offsets or has
                                values of the wrong type */
    FW_ST_EDUPLICATE,        /* a tensor name appears twice */
    FW_ST_EDTYPE,            /* unknown dtype (FW_EFORMAT) or one this build does
                                not support, e.g. F8_E4M3 (FW_EUNSUPPORTED) */
    FW_ST_ESHAPE,            /* shape x dtype size != offsets span, or overflow,
                                or more than FW_MAX_DIMS dims */
    FW_ST_EBOUNDS,           /* data_offsets beyond the data section */
    FW_ST_EOFFSETS,          /* end < begin, overlap, gap, or bytes no tensor covers */
    FW_ST_EMETADATA,         /* __metadata__ is not a string -> string map */
    FW_ST_EARG               /* bad argument to save (names, tensors) */
} fw_st_error;

/* The kind of the last safetensors failure on this thread (FW_ST_OK after a
 * success). */
fw_st_error fw_safetensors_error_kind(void);

typedef struct fw_safetensors fw_safetensors;

/* Map and validate `path`. Caller closes with fw_safetensors_close().
 * Errors: FW_EIO (cannot open/map), FW_EFORMAT (malformed; see the kind),
 * FW_EUNSUPPORTED (a valid dtype this build cannot load), FW_ENOMEM. */
int fw_safetensors_open(fw_safetensors **out, const char *path);

/* Validate a file image in memory. Borrows buf: it must outlive *out.
 * Same errors as fw_safetensors_open. */
int fw_safetensors_open_memory(fw_safetensors **out, const void *buf, size_t len);

/* NULL-safe; unmaps the file. */
void fw_safetensors_close(fw_safetensors *f);

/* Tensors, in file order of their data offsets. */
size_t fw_safetensors_count(const fw_safetensors *f);
/* Index of `name`, or -1. */
int64_t fw_safetensors_find(const fw_safetensors *f, const char *name);
const char *fw_safetensors_name(const fw_safetensors *f, size_t i);
fw_dtype fw_safetensors_dtype(const fw_safetensors *f, size_t i);
int fw_safetensors_ndim(const fw_safetensors *f, size_t i);
const int64_t *fw_safetensors_shape(const fw_safetensors *f, size_t i);
/* The raw little-endian bytes (possibly unaligned) and their count. */
const void *fw_safetensors_data(const fw_safetensors *f, size_t i, size_t *nbytes);

/* A new tensor with a copy of tensor i (stop_gradient true). FW_ERANGE for
 * a bad index. */
int fw_safetensors_tensor(fw_tensor **out, const fw_safetensors *f, size_t i);
/* Tensor i without a copy when the file was mapped and the data is aligned
 * for its dtype (safetensors writers pad the header to 8 bytes, so it
 * normally is); otherwise a copy, as fw_safetensors_tensor(). The view
 * keeps the mapping alive (see above). FW_ERANGE for a bad index. */
int fw_safetensors_tensor_view(fw_tensor **out, fw_safetensors *f, size_t i);
/* The same by name; FW_ERANGE naming it when absent. */
int fw_safetensors_get(fw_tensor **out, const fw_safetensors *f, const char *name);

/* __metadata__ entries (borrowed strings). */
size_t fw_safetensors_metadata_count(const fw_safetensors *f);
const char *fw_safetensors_metadata_key(const fw_safetensors *f, size_t i);
const char *fw_safetensors_metadata_value(const fw_safetensors *f, size_t i);
/* The value for key, or NULL. */
const char *fw_safetensors_metadata_get(const fw_safetensors *f, const char *key);

/* Write tensors[i] under names[i] (any view; written in C order) with the
 * optional metadata map (nmeta pairs; keys/values may be NULL when 0) to
 * `path`, atomically (a temporary file renamed into place, so a failure
 * leaves no partial file). Data offsets follow the given order; the header
 * is padded with spaces to a multiple of 8 so the data is aligned.
 * Errors: FW_EINVAL (NULL or empty or repeated name, "__metadata__" as a
 * name, NULL tensor, repeated metadata key), FW_EDEVICE, FW_EIO, FW_ENOMEM. */
int fw_safetensors_save(const char *path, const char *const *names, fw_tensor *const *tensors,
                        size_t n, const char *const *meta_keys,
                        const char *const *meta_values, size_t nmeta);

#ifdef __cplusplus
}
#endif
#endif
