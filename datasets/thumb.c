/*
 * thumb.c - an image's size and a small PNG of it (preview_int.h), with stb
 * (stb_impl.c). Decoders are attack surface: the header is read first and
 * an image over DS_IMAGE_PIXELS_MAX is refused before a byte is decoded;
 * this runs only on the preview worker, never on a request thread.
 */
#include "preview_int.h"

#include "ed_buf.h"
#include "ed_error.h"

#include <stdlib.h>
#include <string.h>

#define STBI_NO_STDIO
#include <stb/stb_image.h>
#include <stb/stb_image_resize.h>
#define STBI_WRITE_NO_STDIO
#include <stb/stb_image_write.h>

const char *ds__image_sniff(const unsigned char *b, size_t n)
{
    if (n >= 8 && memcmp(b, "\x89PNG\r\n\x1a\n", 8) == 0)
        return "image/png";
    if (n >= 3 && b[0] == 0xff && b[1] == 0xd8 && b[2] == 0xff)
        return "image/jpeg";
    if (n >= 6 && (memcmp(b, "GIF87a", 6) == 0 || memcmp(b, "GIF89a", 6) == 0))
        return "image/gif";
    if (n >= 14 && b[0] == 'B' && b[1] == 'M')
        return "image/bmp";
    return NULL;
}

typedef struct png_sink {
    ed_buf b;
    bool failed;
} png_sink;

static void png_out(void *ctx, void *data, int size)
{
    png_sink *s = ctx;
    if (size > 0 && ed_buf_append(&s->b, data, (size_t)size) < 0)
        s->failed = true;
}

static char *base64(const unsigned char *in, size_t n)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    static const char prefix[] = "data:image/png;base64,";
    char *out = malloc(sizeof(prefix) + (n + 2) / 3 * 4), *o;

    if (!out)
        return NULL;
    memcpy(out, prefix, sizeof(prefix) - 1);
    o = out + sizeof(prefix) - 1;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)in[i] << 16 | (i + 1 < n ? (unsigned)in[i + 1] << 8 : 0) | (i + 2 < n ? in[i + 2] : 0);
        *o++ = tab[v >> 18 & 63];
        *o++ = tab[v >> 12 & 63];
        *o++ = i + 1 < n ? tab[v >> 6 & 63] : '=';
        *o++ = i + 2 < n ? tab[v & 63] : '=';
    }
    *o = '\0';
    return out;
}

int ds__thumb(json_t *obj, const unsigned char *buf, size_t len)
{
    int w, h, comp, tw, th, err = 0;
    unsigned char *pix = NULL, *small = NULL;
    png_sink png = {{0}, false};
    char *url = NULL;

    if (len > (size_t)INT32_MAX)
        return ed_error_set(ED_ETOOBIG, "image file is too large to decode");
    /* a PNG's size is in its IHDR: say so plainly where stb only answers
     * that no decoder takes it */
    if (len >= 24 && memcmp(buf, "\x89PNG\r\n\x1a\n", 8) == 0 && memcmp(buf + 12, "IHDR", 4) == 0) {
        uint32_t pw = (uint32_t)buf[16] << 24 | (uint32_t)buf[17] << 16 | (uint32_t)buf[18] << 8 | buf[19];
        uint32_t ph = (uint32_t)buf[20] << 24 | (uint32_t)buf[21] << 16 | (uint32_t)buf[22] << 8 | buf[23];
        if ((int64_t)pw * ph > DS_IMAGE_PIXELS_MAX && pw <= INT32_MAX && ph <= INT32_MAX) {
            json_object_set_new(obj, "width", json_integer(pw));
            json_object_set_new(obj, "height", json_integer(ph));
            return ed_error_set(ED_ETOOBIG, "image is %ux%u: too large for a thumbnail (over %lld pixels)", pw, ph,
                                (long long)DS_IMAGE_PIXELS_MAX);
        }
    }
    if (!stbi_info_from_memory(buf, (int)len, &w, &h, &comp))
        return ed_error_set(ED_EINVAL, "image header does not read: %s", stbi_failure_reason());
    json_object_set_new(obj, "width", json_integer(w));
    json_object_set_new(obj, "height", json_integer(h));
    if ((int64_t)w * h > DS_IMAGE_PIXELS_MAX || w <= 0 || h <= 0)
        return ed_error_set(ED_ETOOBIG, "image is %dx%d: too large for a thumbnail (over %lld pixels)", w, h,
                            (long long)DS_IMAGE_PIXELS_MAX);
    if (comp < 1 || comp > 4)
        comp = 4;
    if ((pix = stbi_load_from_memory(buf, (int)len, &w, &h, &comp, comp)) == NULL)
        return ed_error_set(ED_EINVAL, "image does not decode: %s", stbi_failure_reason());
    tw = w;
    th = h;
    if (w > DS_THUMB_MAX || h > DS_THUMB_MAX) {
        if (w >= h) {
            tw = DS_THUMB_MAX;
            th = (int)((int64_t)h * DS_THUMB_MAX / w);
        } else {
            th = DS_THUMB_MAX;
            tw = (int)((int64_t)w * DS_THUMB_MAX / h);
        }
        if (tw < 1)
            tw = 1;
        if (th < 1)
            th = 1;
    }
    if ((small = malloc((size_t)tw * (size_t)th * (size_t)comp)) == NULL) {
        err = ed_error_set(ED_ENOMEM, "thumbnail");
        goto done;
    }
    if (!stbir_resize_uint8(pix, w, h, 0, small, tw, th, 0, comp)) {
        err = ed_error_set(ED_EINVAL, "image does not resize");
        goto done;
    }
    if (!stbi_write_png_to_func(png_out, &png, tw, th, comp, small, tw * comp) || png.failed || png.b.len == 0) {
        err = ed_error_set(ED_ENOMEM, "thumbnail PNG");
        goto done;
    }
    if ((url = base64((const unsigned char *)png.b.data, png.b.len)) == NULL) {
        err = ed_error_set(ED_ENOMEM, "thumbnail");
        goto done;
    }
    json_object_set_new(obj, "thumbnail", json_string(url));
    json_object_set_new(obj, "thumbnail_width", json_integer(tw));
    json_object_set_new(obj, "thumbnail_height", json_integer(th));
done:
    free(url);
    ed_buf_free(&png.b);
    free(small);
    stbi_image_free(pix);
    return err;
}
