/*
 * fuzz_config.c - the server configuration file (gw_config_load_file), read
 * by `eddy serve --config FILE`, and the "HOST:PORT" listen parser.
 *
 * Input: the file's bytes, loaded from an in-memory file. The loader's
 * contract is all or nothing: when it fails, the config it was given must be
 * unchanged.
 */
#include "fuzz.h"

#include "ed_error.h"
#include "gw.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gw_config c, before;
    char path[64], *s;
    int err;

    gw_config_defaults(&c);
    before = c;
    (void)fuzz_memfile(path, data, size);
    err = gw_config_load_file(&c, path);
    if (err != 0 && memcmp(&c, &before, sizeof(c)) != 0)
        abort();   /* a bad file changed the configuration */
    if (err == 0) {
        /* Strings stay terminated inside their fields. */
        if (memchr(c.data_dir, '\0', sizeof(c.data_dir)) == NULL ||
            memchr(c.listen_host, '\0', sizeof(c.listen_host)) == NULL ||
            memchr(c.tls_cert, '\0', sizeof(c.tls_cert)) == NULL ||
            memchr(c.tls_key, '\0', sizeof(c.tls_key)) == NULL ||
            memchr(c.env_name, '\0', sizeof(c.env_name)) == NULL ||
            memchr(c.trusted_proxies, '\0', sizeof(c.trusted_proxies)) == NULL)
            abort();
    }

    /* The same bytes as a listen address. */
    s = fuzz_strndup(data, size);
    gw_config_defaults(&c);
    before = c;
    if (gw_config_set_listen(&c, s) != 0 && memcmp(&c, &before, sizeof(c)) != 0)
        abort();
    free(s);
    ed_error_clear();
    return 0;
}
