/*
 * fuzz_ws.c - the WebSocket frame codec (gw__ws_parse), which reads every
 * byte a browser sends on a kernel channel, plus the handshake key check
 * (gw__ws_accept_key) and a round trip through gw__ws_frame_header.
 *
 * Input: byte 0 = options (bit 0: server side, frames must be masked; bits
 * 1-2: the message size limit), byte 1 = how many bytes arrive per read (0:
 * all at once), the rest = the byte stream from the peer. The stream is fed
 * the way ws.c's reader loop feeds it (parse what is buffered, drop what was
 * consumed, read more) and each result is checked against gw_int.h's
 * contract.
 */
#include "fuzz.h"

#include "ed_error.h"
#include "gw_int.h"

static const size_t limits[] = {0, 16, 200, 4096};

static void check_event(const gw_ws_event *ev, size_t max)
{
    volatile uint8_t sink = 0;

    for (size_t i = 0; i < ev->len; i++)   /* the bytes must be readable */
        sink ^= ev->data[i];
    (void)sink;
    switch (ev->opcode) {
    case GW_WS_TEXT:
        if (!gw__utf8_valid(ev->data, ev->len))
            abort();
        /* fall through */
    case GW_WS_BINARY:
        if (ev->len > max)
            abort();
        break;
    case GW_WS_PING:
    case GW_WS_PONG:
        if (ev->len > 125)
            abort();
        break;
    case GW_WS_CLOSE:
        if (ev->len > 123 || ev->close_code < 1000 || ev->close_code > 4999 ||
            !gw__utf8_valid(ev->data, ev->len))
            abort();
        break;
    default:
        abort();   /* CONT never reaches the caller */
    }
}

/* Feed `stream` in chunks of `chunk` bytes (0: all at once). */
static void feed(const uint8_t *stream, size_t n, size_t chunk, bool require_mask, size_t limit)
{
    gw_ws_parser p;
    size_t max = limit ? limit : GW_WS_MAX_MESSAGE;
    size_t start = 0, avail = 0;
    uint8_t *buf = malloc(n ? n : 1);   /* parsed in place: a writable copy */

    if (buf == NULL)
        abort();
    if (n)
        memcpy(buf, stream, n);
    memset(&p, 0, sizeof(p));
    p.max_message = limit;
    p.require_mask = require_mask;
    while (avail < n) {
        avail = chunk == 0 || n - avail < chunk ? n : avail + chunk;
        while (start < avail) {
            gw_ws_event ev;
            size_t used = 12345;
            int rc = gw__ws_parse(&ev, &p, buf + start, avail - start, &used);
            if (rc < 0) {
                if ((rc != ED_EINVAL && rc != ED_ETOOBIG && rc != ED_ENOMEM) ||
                    (rc == ED_ETOOBIG && ev.close_code != 1009) ||
                    (rc == ED_EINVAL && ev.close_code != 1002 && ev.close_code != 1007))
                    abort();
                goto done;
            }
            if (used > avail - start || (rc == 1 && used == 0) || rc > 1)
                abort();
            if (used == 0)
                break;   /* incomplete: read more */
            start += used;
            if (rc == 1) {
                check_event(&ev, max);
                if (ev.opcode == GW_WS_CLOSE)
                    goto done;   /* the server stops reading after a close */
            }
        }
    }
done:
    gw__ws_parser_free(&p);
    free(buf);
}

/* Build one frame from the input's bytes and parse it back: it must come
 * out whole, with the same opcode and payload. */
static void round_trip(const uint8_t *data, size_t size)
{
    static const int ops[] = {GW_WS_TEXT, GW_WS_BINARY, GW_WS_PING, GW_WS_PONG};
    uint8_t frame[14 + 300], orig[300], mask[4] = {0x12, 0x34, 0x56, 0x78};
    size_t plen, hl;
    int op;
    bool masked;
    gw_ws_parser p;
    gw_ws_event ev;
    size_t used;

    if (size < 2)
        return;
    op = ops[data[0] & 3];
    masked = (data[0] & 4) != 0;
    plen = size - 2 > 300 ? 300 : size - 2;
    if (op == GW_WS_PING || op == GW_WS_PONG)
        plen = plen > 125 ? 125 : plen;
    if (op == GW_WS_TEXT && !gw__utf8_valid(data + 2, plen))
        op = GW_WS_BINARY;
    memcpy(orig, data + 2, plen);
    hl = gw__ws_frame_header(frame, op, true, plen, masked ? mask : NULL);
    if (hl < 2 || hl > 14)
        abort();
    for (size_t i = 0; i < plen; i++)
        frame[hl + i] = (uint8_t)(orig[i] ^ (masked ? mask[i & 3] : 0));
    memset(&p, 0, sizeof(p));
    p.require_mask = masked;
    if (gw__ws_parse(&ev, &p, frame, hl + plen, &used) != 1 || used != hl + plen ||
        ev.opcode != op || ev.len != plen || (plen && memcmp(ev.data, orig, plen) != 0))
        abort();
    gw__ws_parser_free(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char accept[29], *key;

    if (size < 2)
        return 0;
    feed(data + 2, size - 2, data[1], data[0] & 1, limits[(data[0] >> 1) & 3]);
    round_trip(data, size);

    key = fuzz_strndup(data + 2, size - 2);
    if (gw__ws_accept_key(accept, key) == 0 && strlen(accept) != 28)
        abort();
    free(key);
    ed_error_clear();
    return 0;
}
