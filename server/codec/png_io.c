/* png_io.c — in-memory PNG decode/encode with limits. */
#include "codec/png_io.h"

#include <png.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "errors.h"
#include "codec/png_decode.h"
#include "codec/png_encode.h"

#define PNGIO_DEFAULT_MAX_SIDE 32768u
#define PNGIO_DEFAULT_MAX_PIXELS 50000000u
#define PNGIO_DEFAULT_MAX_CHUNK ((size_t)8 << 20)
/* Ancillary chunks libpng may store per image; a backstop, as decode skips them all (below). */
#define PNGIO_CHUNK_CACHE_MAX 128
#define PNGIO_SIG_LEN 8
/* Signature + IHDR chunk: 8 + length 4 + type 4 + data 13 + CRC 4. */
#define PNGIO_IHDR_END 33
#define PNGIO_IHDR_LEN 13
/* Encoder zlib output buffer = IDAT chunk size: 64 KiB costs no time over libpng's 8 KiB and
 * makes 8x fewer chunks and write callbacks. */
#define PNGIO_ZBUF_SIZE 65536
#define PNGIO_WBUF_MIN 16384

static const uint8_t pngio_sig[PNGIO_SIG_LEN] = {137, 80, 78, 71, 13, 10, 26, 10};

/* Ancillary chunks decode never needs: streamed through the CRC check and dropped, never
 * buffered, so a zTXt/iCCP bomb is never inflated and text never accumulates. This list is the
 * real guard: libpng 1.6.39 buffered a whole 25 MB tEXt despite png_set_chunk_malloc_max (8 MB)
 * in the test without it. 5 bytes each (name + NUL), as libpng wants. */
static const png_byte pngio_skip_chunks[] = "bKGD\0cHRM\0eXIf\0gAMA\0hIST\0iCCP\0iTXt\0oFFs\0pCAL\0"
                                            "pHYs\0sBIT\0sCAL\0sPLT\0sRGB\0sTER\0tEXt\0tIME\0zTXt";
#define PNGIO_NSKIP ((int)(sizeof(pngio_skip_chunks) / 5))

/* Where libpng's error callback writes: message prefix, the code to return, the caller buffer. */
struct pngio_fail {
    const char *what;
    int code;
    char *err;
};

struct pngio_src {
    const uint8_t *data;
    size_t len, pos;
};

struct pngio_wbuf {
    uint8_t *p;
    size_t len, cap;
};

/* Everything a decode holds; lives in pngio_decode's frame, never in the setjmp frame. */
struct pngio_dec {
    png_structp png;
    png_infop info;
    png_bytep *rows;
    struct img im;
    struct pngio_src src;
    struct pngio_fail fail;
};

struct pngio_enc {
    png_structp png;
    png_infop info;
    png_bytep row1;
    struct pngio_wbuf buf;
    struct pngio_fail fail;
};

struct pngio_ihdr {
    uint32_t w, h;
    int depth, color, ch, interlace;
};

void pngio_default_limits(struct png_limits *lim)
{
    lim->max_side = PNGIO_DEFAULT_MAX_SIDE;
    lim->max_pixels = PNGIO_DEFAULT_MAX_PIXELS;
    lim->max_chunk_bytes = PNGIO_DEFAULT_MAX_CHUNK;
}

int pngio_is_png(const uint8_t *data, size_t len)
{
    return data && len >= PNGIO_SIG_LEN && memcmp(data, pngio_sig, PNGIO_SIG_LEN) == 0;
}

static uint32_t pngio_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* Channels of an IHDR colour type before tRNS, or 0 for a combination PNG does not allow. */
static int pngio_base_channels(int color, int depth)
{
    int low = depth == 1 || depth == 2 || depth == 4;

    switch (color) {
    case PNG_COLOR_TYPE_GRAY:
        return low || depth == 8 || depth == 16 ? 1 : 0;
    case PNG_COLOR_TYPE_PALETTE:
        return low || depth == 8 ? 3 : 0;
    case PNG_COLOR_TYPE_RGB:
        return depth == 8 || depth == 16 ? 3 : 0;
    case PNG_COLOR_TYPE_GRAY_ALPHA:
        return depth == 8 || depth == 16 ? 2 : 0;
    case PNG_COLOR_TYPE_RGB_ALPHA:
        return depth == 8 || depth == 16 ? 4 : 0;
    }
    return 0;
}

/* Checks the signature and the IHDR chunk (first, 13 bytes, CRC, legal fields) by hand, so the
 * size decision needs nothing but these 33 bytes. */
static int pngio_parse_ihdr(const uint8_t *data, size_t len, struct pngio_ihdr *h, char *err)
{
    const uint8_t *d = data + 16;

    if (!pngio_is_png(data, len))
        return edged_fail(err, EDGED_E_NOT_PNG, "not a PNG: no PNG signature in the first 8 of %zu bytes",
                          len);
    if (len < PNGIO_IHDR_END)
        return edged_fail(err, EDGED_E_BAD_PNG, "corrupt PNG: truncated inside IHDR (%zu bytes)", len);
    if (pngio_be32(data + 8) != PNGIO_IHDR_LEN || memcmp(data + 12, "IHDR", 4) != 0)
        return edged_fail(err, EDGED_E_BAD_PNG, "corrupt PNG: first chunk is not a 13-byte IHDR");
    if (crc32(0, data + 12, 4 + PNGIO_IHDR_LEN) != pngio_be32(data + 29))
        return edged_fail(err, EDGED_E_BAD_PNG, "corrupt PNG: IHDR: CRC error");
    h->w = pngio_be32(d);
    h->h = pngio_be32(d + 4);
    h->depth = d[8];
    h->color = d[9];
    h->ch = pngio_base_channels(h->color, h->depth);
    h->interlace = d[12];
    if (h->w == 0 || h->h == 0 || h->w > PNG_UINT_31_MAX || h->h > PNG_UINT_31_MAX)
        return edged_fail(err, EDGED_E_BAD_PNG, "corrupt PNG: IHDR size %ux%u invalid", h->w, h->h);
    if (h->ch == 0)
        return edged_fail(err, EDGED_E_BAD_PNG, "corrupt PNG: IHDR bit depth %d invalid for colour type %d",
                          h->depth, h->color);
    if (d[10] != 0 || d[11] != 0 || d[12] > 1)
        return edged_fail(err, EDGED_E_BAD_PNG,
                          "corrupt PNG: IHDR compression/filter/interlace %d/%d/%d invalid", d[10], d[11],
                          d[12]);
    return 0;
}

/* The caller's limits, capped by the absolute bounds (IMG_MAX_SIDE, IMG_MAX_PIXELS, those of
 * img_check_size), so that the answer always names the limit in force. */
int pngio_check_size(const struct png_limits *lim, uint32_t w, uint32_t h, char *err)
{
    uint64_t side = lim->max_side < IMG_MAX_SIDE ? lim->max_side : IMG_MAX_SIDE;
    uint64_t pix = lim->max_pixels < IMG_MAX_PIXELS ? lim->max_pixels : IMG_MAX_PIXELS;
    uint64_t n = (uint64_t)w * h;

    if (w > side || h > side)
        return edged_fail(err, EDGED_E_IMAGE_TOO_LARGE, "image %ux%u exceeds max-side %llu", w, h,
                          (unsigned long long)side);
    if (n > pix)
        return edged_fail(err, EDGED_E_IMAGE_TOO_LARGE, "image %ux%u = %llu pixels exceeds max-pixels %llu",
                          w, h, (unsigned long long)n, (unsigned long long)pix);
    return 0;
}

/* The chunks before the first IDAT that peek reports: tRNS (an alpha channel more) and acTL (an
 * animated PNG, whose default image is what edged decodes). Walks chunk headers only: no data is
 * read and no CRC checked (decode does that); a truncated walk stops where it is. */
static void pngio_scan_chunks(const uint8_t *data, size_t len, int *trns, int *actl)
{
    size_t pos = PNGIO_IHDR_END;

    *trns = *actl = 0;
    while (len - pos >= 12) {
        size_t n = pngio_be32(data + pos);
        const uint8_t *type = data + pos + 4;

        *trns |= memcmp(type, "tRNS", 4) == 0;
        *actl |= memcmp(type, "acTL", 4) == 0;
        if (memcmp(type, "IDAT", 4) == 0 || memcmp(type, "IEND", 4) == 0 || n > len - pos - 12)
            return;
        pos += 12 + n;
    }
}

int pngio_peek(const uint8_t *data, size_t len, struct pngio_info *info, char *err)
{
    struct pngio_ihdr hd;
    int rc = pngio_parse_ihdr(data, len, &hd, err), trns;

    memset(info, 0, sizeof(*info));
    if (rc)
        return rc;
    pngio_scan_chunks(data, len, &trns, &info->animated);
    if (hd.color != PNG_COLOR_TYPE_GRAY_ALPHA && hd.color != PNG_COLOR_TYPE_RGB_ALPHA && trns)
        hd.ch++;
    info->w = hd.w > INT32_MAX ? INT32_MAX : (int)hd.w;
    info->h = hd.h > INT32_MAX ? INT32_MAX : (int)hd.h;
    info->ch = hd.ch;
    info->depth = hd.depth;
    info->interlaced = hd.interlace == 1;
    return 0;
}

/* libpng error callback: keeps libpng's message (libpng's default would print it), picks the
 * code (only png_malloc's "Out of memory" is ours to call NOMEM) and unwinds to the setjmp. */
static void pngio_on_error(png_structp png, png_const_charp msg)
{
    struct pngio_fail *f = png_get_error_ptr(png);

    if (strcmp(msg, "Out of memory") == 0)
        f->code = EDGED_E_NOMEM;
    edged_fail(f->err, f->code, "%s: %s", f->what, msg);
    png_longjmp(png, 1);
}

/* Warnings (ancillary chunk oddities, benign errors) change nothing we return: ignored. */
static void pngio_on_warning(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg;
}

/* Reads from the in-memory file; running past its end is an error, so a truncated file can never
 * yield a partial image (libpng would otherwise see whatever the buffer holds). */
static void pngio_read(png_structp png, png_bytep buf, size_t n)
{
    struct pngio_src *s = png_get_io_ptr(png);

    if (n > s->len - s->pos)
        png_error(png, "unexpected end of data (file truncated)");
    memcpy(buf, s->data + s->pos, n);
    s->pos += n;
}

/* Limits and chunk policy. Every CRC error is fatal, also in ancillary chunks (libpng's default
 * would warn and drop those): a damaged file is rejected, never half-trusted. */
static void pngio_dec_configure(png_structp png, const struct png_limits *lim)
{
    uint32_t side = lim->max_side < PNG_UINT_31_MAX ? lim->max_side : PNG_UINT_31_MAX;

    png_set_user_limits(png, side, side);
    png_set_chunk_cache_max(png, PNGIO_CHUNK_CACHE_MAX);
    png_set_chunk_malloc_max(png, lim->max_chunk_bytes);
    png_set_crc_action(png, PNG_CRC_ERROR_QUIT, PNG_CRC_ERROR_QUIT);
    png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, NULL, 0);
    png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, pngio_skip_chunks, PNGIO_NSKIP);
}

/* The transforms to 8-bit samples: palette -> RGB, gray 1/2/4 -> 0..255, tRNS -> alpha,
 * 16 -> 8 bits by png_set_scale_16 (exactly round(v/257): the test checks all 65536 values).
 * No gamma and no background (bKGD) processing. */
static void pngio_dec_transforms(png_structp png, png_infop info)
{
    int color = png_get_color_type(png, info), depth = png_get_bit_depth(png, info);

    if (color == PNG_COLOR_TYPE_PALETTE)
        png_set_palette_to_rgb(png);
    if (color == PNG_COLOR_TYPE_GRAY && depth < 8)
        png_set_expand_gray_1_2_4_to_8(png);
    if (png_get_valid(png, info, PNG_INFO_tRNS))
        png_set_tRNS_to_alpha(png);
    if (depth == 16)
        png_set_scale_16(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
}

/* The decode proper. Its locals are not used after a longjmp (that path only returns the code),
 * and everything that must be released lives in *d, outside this frame. */
static int pngio_dec_run(struct pngio_dec *d, const struct png_limits *lim, char *err)
{
    png_structp png = d->png;
    png_infop info = d->info;
    int rc;

    if (setjmp(png_jmpbuf(png)))
        return d->fail.code;
    png_set_read_fn(png, &d->src, pngio_read);
    pngio_dec_configure(png, lim);
    png_read_info(png, info);
    rc = pngio_check_size(lim, png_get_image_width(png, info), png_get_image_height(png, info), err);
    if (rc)
        return rc;
    pngio_dec_transforms(png, info);
    rc = img_alloc(&d->im, (int)png_get_image_width(png, info), (int)png_get_image_height(png, info),
                   png_get_channels(png, info), err);
    if (rc)
        return rc;
    if (png_get_bit_depth(png, info) != 8 || png_get_rowbytes(png, info) != d->im.stride)
        return edged_fail(err, EDGED_E_INTERNAL, "PNG decode: transforms gave %d-bit rows of %zu bytes",
                          png_get_bit_depth(png, info), (size_t)png_get_rowbytes(png, info));
    d->rows = malloc((size_t)d->im.h * sizeof(*d->rows));
    if (!d->rows)
        return edged_fail(err, EDGED_E_NOMEM, "cannot allocate %d PNG row pointers", d->im.h);
    for (int y = 0; y < d->im.h; y++)
        d->rows[y] = d->im.px + (size_t)y * d->im.stride;
    png_read_image(png, d->rows);
    png_read_end(png, info); /* with the info struct, an unknown critical chunk after IDAT is an error */
    return 0;
}

/* What every decode checks before anything is allocated: signature, IHDR fields and size limits
 * (*lim NULL becomes the defaults, kept in *def). */
static int pngio_dec_check(const uint8_t *data, size_t len, const struct png_limits **lim, struct png_limits *def,
                           char *err)
{
    struct pngio_ihdr hd;
    int rc;

    if (!*lim) {
        pngio_default_limits(def);
        *lim = def;
    }
    if ((rc = pngio_parse_ihdr(data, len, &hd, err)))
        return rc;
    return pngio_check_size(*lim, hd.w, hd.h, err);
}

/* Limits are decided from the hand-parsed IHDR before libpng runs, then again from libpng's view
 * right after png_read_info; rows are allocated only after both. lim NULL means the defaults. */
int pngio_decode_libpng(const uint8_t *data, size_t len, const struct png_limits *lim, struct img *out,
                        char *err)
{
    struct pngio_dec d = {0};
    struct png_limits def;
    int rc;

    memset(out, 0, sizeof(*out));
    if ((rc = pngio_dec_check(data, len, &lim, &def, err)))
        return rc;
    d.src = (struct pngio_src){data, len, 0};
    d.fail = (struct pngio_fail){"corrupt PNG", EDGED_E_BAD_PNG, err};
    d.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &d.fail, pngio_on_error, pngio_on_warning);
    if (d.png)
        d.info = png_create_info_struct(d.png);
    if (!d.png || !d.info) {
        rc = edged_fail(err, EDGED_E_NOMEM, "cannot create the PNG decoder");
        goto out;
    }
    rc = pngio_dec_run(&d, lim, err);
out:
    png_destroy_read_struct(&d.png, &d.info, NULL);
    free(d.rows);
    if (rc)
        img_free(&d.im);
    else
        *out = d.im;
    return rc;
}

/* The IHDR and limit checks, then the fast decoder; what it declines (rare kinds, anything
 * damaged or unusual) goes to libpng, so every refusal keeps libpng's code and message. */
int pngio_decode(const uint8_t *data, size_t len, const struct png_limits *lim, struct img *out, char *err)
{
    struct png_limits def;
    int rc;

    memset(out, 0, sizeof(*out));
    if ((rc = pngio_dec_check(data, len, &lim, &def, err)))
        return rc;
    rc = pngdec_decode(data, len, out, err);
    return rc == PNGDEC_DECLINED ? pngio_decode_libpng(data, len, lim, out, err) : rc;
}

/* Appends to the growing output buffer; doubling keeps the copies O(n). */
static void pngio_write(png_structp png, png_bytep data, size_t n)
{
    struct pngio_wbuf *b = png_get_io_ptr(png);

    if (n > b->cap - b->len) {
        size_t cap = b->cap ? b->cap : PNGIO_WBUF_MIN;
        uint8_t *p;

        while (cap - b->len < n) {
            if (cap > SIZE_MAX / 2)
                png_error(png, "Out of memory");
            cap *= 2;
        }
        p = realloc(b->p, cap);
        if (!p)
            png_error(png, "Out of memory");
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, data, n);
    b->len += n;
}

static void pngio_flush(png_structp png)
{
    (void)png;
}

/* Row filter by level, from timing the filters on photos, gradient maps and binary maps: level 0
 * stores (filtering would only cost time): NONE; levels 1-3 (zlib's fast path): UP, the fastest
 * and about the smallest, where adaptive is twice as slow; 4-9 ask for size: libpng's default
 * (adaptive) is the smallest; 1-bit output: NONE, smallest at equal time. Z_RLE is not used: it
 * wins only on 0/255 maps, which 1-bit output serves better. */
static void pngio_enc_configure(png_structp png, int level, int bit_depth)
{
    png_set_compression_level(png, level);
    png_set_compression_buffer_size(png, PNGIO_ZBUF_SIZE);
    if (bit_depth == 1 || level == 0)
        png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_NONE);
    else if (level <= 3)
        png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_UP);
}

static int pngio_enc_run(struct pngio_enc *e, const struct img *im, int level, int bit_depth)
{
    png_structp png = e->png;
    static const int colors[5] = {0, PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB,
                                  PNG_COLOR_TYPE_RGB_ALPHA};

    if (setjmp(png_jmpbuf(png)))
        return e->fail.code;
    png_set_write_fn(png, &e->buf, pngio_write, pngio_flush);
    png_set_IHDR(png, e->info, (png_uint_32)im->w, (png_uint_32)im->h, bit_depth, colors[im->ch],
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    pngio_enc_configure(png, level, bit_depth);
    png_write_info(png, e->info);
    for (int y = 0; y < im->h; y++) {
        const uint8_t *row = im->px + (size_t)y * im->stride;

        if (bit_depth == 1 && !im->packed) {
            pngenc_pack_row1(row, im->w, e->row1);
            row = e->row1;
        }
        png_write_row(png, row);
    }
    png_write_end(png, NULL);
    return 0;
}

static int pngio_enc_check(const struct img *im, int level, int bit_depth, uint8_t **out, size_t *out_len,
                           char *err)
{
    if (!out || !out_len)
        return edged_fail(err, EDGED_E_PARAM, "PNG encode: no output pointer");
    if (!im || !im->px || img_check_size(im->w, im->h, NULL) < 0 || im->ch < 1 || im->ch > 4 ||
        im->stride < (im->packed ? ((size_t)im->w + 7) / 8 : (size_t)im->w * (size_t)im->ch))
        return edged_fail(err, EDGED_E_PARAM, "PNG encode: invalid image");
    if (im->packed && (im->ch != 1 || bit_depth != 1))
        return edged_fail(err, EDGED_E_PARAM, "PNG encode: a packed 1-bit map is written as a 1-bit PNG only, "
                                              "not %d-bit with %d channels", bit_depth, im->ch);
    if (level < 0 || level > 9)
        return edged_fail(err, EDGED_E_PARAM, "PNG level %d out of range 0..9", level);
    if (bit_depth != 8 && bit_depth != 1)
        return edged_fail(err, EDGED_E_PARAM, "PNG bit depth %d not supported (1 or 8)", bit_depth);
    if (bit_depth == 1 && im->ch != 1)
        return edged_fail(err, EDGED_E_PARAM, "1-bit PNG needs a 1-channel image, not %d channels", im->ch);
    return 0;
}

int pngio_encode(const struct img *im, int level, int bit_depth, uint8_t **out, size_t *out_len, char *err)
{
    int rc;

    if (out)
        *out = NULL;
    if (out_len)
        *out_len = 0;
    if ((rc = pngio_enc_check(im, level, bit_depth, out, out_len, err)))
        return rc;
    rc = pngenc_encode(im, level, bit_depth, out, out_len, err);
    return rc == PNGENC_DECLINED ? pngio_encode_libpng(im, level, bit_depth, out, out_len, err) : rc;
}

int pngio_encode_libpng(const struct img *im, int level, int bit_depth, uint8_t **out, size_t *out_len,
                        char *err)
{
    struct pngio_enc e = {0};
    int rc;

    if (out)
        *out = NULL;
    if (out_len)
        *out_len = 0;
    if ((rc = pngio_enc_check(im, level, bit_depth, out, out_len, err)))
        return rc;
    e.fail = (struct pngio_fail){"PNG encode failed", EDGED_E_INTERNAL, err};
    e.png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &e.fail, pngio_on_error, pngio_on_warning);
    if (e.png)
        e.info = png_create_info_struct(e.png);
    if (bit_depth == 1 && !im->packed)
        e.row1 = malloc(((size_t)im->w + 7) / 8);
    if (!e.png || !e.info || (bit_depth == 1 && !im->packed && !e.row1)) {
        rc = edged_fail(err, EDGED_E_NOMEM, "cannot create the PNG encoder");
        goto out;
    }
    rc = pngio_enc_run(&e, im, level, bit_depth);
out:
    png_destroy_write_struct(&e.png, &e.info);
    free(e.row1);
    if (rc) {
        free(e.buf.p);
    } else {
        *out = e.buf.p;
        *out_len = e.buf.len;
    }
    return rc;
}
