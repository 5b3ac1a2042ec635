/*
 * fuzz_jupyter_v1.c - the Jupyter "v1.kernel.websocket.jupyter.org" binary
 * frame decoder (gw__jupyter_v1_decode), which reads every binary WebSocket message
 * a JupyterLab client sends to a kernel channel.
 *
 * Input: the WebSocket message payload (offset count, offset table, channel,
 * header, parent_header, metadata, content, buffers). A decoded message must
 * hold the parts the contract promises.
 *
 * Linked with the whole gateway library: the decoder lives in
 * jupyter_routes.c among its handlers.
 */
#include "fuzz.h"

#include "ed_error.h"
#include "gw_int.h"
#include "jupyter_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *msg = (json_t *)1;
    int err = gw__jupyter_v1_decode(&msg, data, size);

    if (err == 0) {
        static const char *const parts[] = {"header", "parent_header", "metadata", "content"};
        if (!json_is_object(msg) || !json_is_string(json_object_get(msg, "channel")) ||
            !json_is_array(json_object_get(msg, "buffers")))
            abort();
        for (size_t i = 0; i < 4; i++)
            if (json_object_get(msg, parts[i]) == NULL)
                abort();
        json_decref(msg);
    } else if (err != ED_EINVAL && err != ED_ENOMEM) {
        abort();
    } else if (msg != NULL) {
        abort();   /* failure leaves *out NULL */
    }
    ed_error_clear();
    return 0;
}
