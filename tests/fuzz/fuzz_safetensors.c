/*
 * fuzz_safetensors.c - the safetensors loader (fw_safetensors_open_memory
 * and fw_safetensors_open), which reads model files users upload.
 *
 * Input: the file image. It is validated from memory and from a mapped
 * in-memory file (the two must agree), and every tensor of an accepted file
 * is read back: its bytes must lie inside the image, and copying it into a
 * tensor must succeed (or fail cleanly for an unsupported dtype).
 */
#include "fuzz.h"

#include "fw/safetensors.h"

static void use_file(fw_safetensors *f, const uint8_t *data, size_t size, int mapped)
{
    size_t n = fw_safetensors_count(f);

    for (size_t i = 0; i < n; i++) {
        size_t nbytes = 0;
        const uint8_t *p = fw_safetensors_data(f, i, &nbytes);
        const char *name = fw_safetensors_name(f, i);
        int nd = fw_safetensors_ndim(f, i);
        const int64_t *shape = fw_safetensors_shape(f, i);
        fw_tensor *t = NULL;

        if (name == NULL || nd < 0 || nd > FW_MAX_DIMS || (nd > 0 && shape == NULL))
            abort();
        if (fw_safetensors_find(f, name) != (int64_t)i)
            abort();
        /* From memory the data must point into the caller's buffer. */
        if (!mapped && nbytes > 0 && (p < data || p + nbytes > data + size))
            abort();
        if (nbytes > size)
            abort();
        (void)fw_safetensors_dtype(f, i);
        /* Copy only modest tensors: a valid header may describe many small ones. */
        if (nbytes <= (1u << 16) && fw_safetensors_tensor(&t, f, i) == 0)
            fw_tensor_unref(t);
        if (mapped && nbytes <= (1u << 16) && fw_safetensors_tensor_view(&t, f, i) == 0)
            fw_tensor_unref(t);
    }
    for (size_t i = 0; i < fw_safetensors_metadata_count(f); i++) {
        const char *k = fw_safetensors_metadata_key(f, i);
        const char *v = fw_safetensors_metadata_value(f, i);
        if (k == NULL || v == NULL || fw_safetensors_metadata_get(f, k) == NULL)
            abort();
    }
    {
        fw_tensor *t = NULL;   /* out of range: an error, not a crash */
        if (fw_safetensors_tensor(&t, f, n) == 0 || t != NULL)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fw_safetensors *fm = NULL, *ff = NULL;
    char path[64];
    int em, ef;
    fw_st_error km, kf;

    em = fw_safetensors_open_memory(&fm, data, size);
    km = fw_safetensors_error_kind();
    if (em == 0)
        use_file(fm, data, size, 0);
    fw_safetensors_close(fm);

    (void)fuzz_memfile(path, data, size);
    ef = fw_safetensors_open(&ff, path);
    kf = fw_safetensors_error_kind();
    if (ef == 0)
        use_file(ff, data, size, 1);
    fw_safetensors_close(ff);

    /* The mapped and in-memory loaders judge a file alike (an empty file may
     * fail to map: that is an I/O error, not a verdict on the contents). */
    if (size > 0 && (em != ef || km != kf)) {
        fprintf(stderr, "memory: %d/%d, file: %d/%d\n", em, (int)km, ef, (int)kf);
        abort();
    }
    return 0;
}
