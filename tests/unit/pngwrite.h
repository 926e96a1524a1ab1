/* pngwrite.h — PNG files of every kind written by libpng for the codec tests (test_png_codec.c,
 * test_gpu_png.c): photo-like samples with noise, palettes with and without tRNS, gray and RGB keys. */
#ifndef EDGED_PNGWRITE_H
#define EDGED_PNGWRITE_H

#include <png.h>
#include <setjmp.h>
#include <stdlib.h>

#include "check.h"
#include "pngbuf.h"

struct kind {
    int color, depth, trns; /* trns: palette entries with alpha, or 1 for a gray/RGB key */
};

static inline void pngwrite_wr(png_structp png, png_bytep data, size_t n)
{
    buf_add(png_get_io_ptr(png), data, n);
}

static inline void pngwrite_fl(png_structp png)
{
    (void)png;
}

/* A smooth photo-like sample with noise, so that every filter type gets chosen somewhere. */
static inline unsigned photo(int x, int y, int c, int w, int h)
{
    int v = (x * 255) / (w > 1 ? w - 1 : 1) * (c + 1) / 4 + (y * 191) / (h > 1 ? h - 1 : 1) +
            ((x / 5 + y / 3 + c) % 7) * 9 + (int)(check_rng() % 13);

    return (unsigned)v;
}

/* Sample c of the first pixel of packed rows (rows hold at least 3 samples' bytes or more). */
static inline png_uint_16 first_sample(const uint8_t *rows, int depth, int c)
{
    if (depth == 16)
        return (png_uint_16)(rows[2 * c] << 8 | rows[2 * c + 1]);
    if (depth == 8)
        return rows[c];
    return (png_uint_16)(rows[0] >> (8 - depth));
}

/* Packed PNG sample rows for kind k (values below 2^depth), written as libpng writes them with the
 * row filters it may choose from (PNG_FILTER_* bits; one bit forces that type). */
static inline struct buf write_kind_filtered(const struct kind *k, int w, int h, size_t zbuf, int filters)
{
    static const int chans[7] = {1, 0, 3, 1, 2, 0, 4};
    int ch = chans[k->color], bits = k->depth * ch;
    size_t rb = ((size_t)w * bits + 7) / 8;
    uint8_t *rows = calloc(rb * h, 1);
    struct buf out = {0};
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    png_color plte[256];
    png_byte alpha[256];
    png_color_16 key = {0};
    unsigned maxv = (1u << k->depth) - 1;

    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < ch; c++) {
                unsigned v = k->color == 3 ? (check_rng() % 5 ? (unsigned)(x + y) : check_rng()) & maxv
                                           : (photo(x, y, c, w, h) * (maxv / 255 + 1)) & maxv;
                size_t bit = ((size_t)x * ch + c) * k->depth;

                if (k->depth == 16) {
                    rows[y * rb + bit / 8] = (uint8_t)(v >> 8);
                    rows[y * rb + bit / 8 + 1] = (uint8_t)v;
                } else {
                    rows[y * rb + bit / 8] |= (uint8_t)(v << (8 - k->depth - bit % 8));
                }
            }
    if (setjmp(png_jmpbuf(png)))
        abort();
    png_set_write_fn(png, &out, pngwrite_wr, pngwrite_fl);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, k->depth, k->color, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_set_compression_level(png, 6);
    png_set_filter(png, PNG_FILTER_TYPE_BASE, filters);
    png_set_compression_buffer_size(png, zbuf);
    if (k->color == 3) {
        int n = 1 << k->depth;
        for (int i = 0; i < n; i++)
            plte[i] = (png_color){(png_byte)check_rng(), (png_byte)check_rng(), (png_byte)check_rng()};
        for (int i = 0; i < 256; i++)
            alpha[i] = (png_byte)check_rng();
        /* a short palette leaves indices past its end: libpng reads them as black. Newer libpng
         * (1.6.43 on Ubuntu 24.04) refuses to write such an index unless told not to check. */
#ifdef PNG_CHECK_FOR_INVALID_INDEX_SUPPORTED
        png_set_check_for_invalid_index(png, 0);
#endif
        png_set_PLTE(png, info, plte, n > 2 && k->trns == 0 ? n - 1 : n);
        if (k->trns)
            png_set_tRNS(png, info, alpha, k->trns < n ? k->trns : n, NULL);
    } else if (k->trns) {
        /* the key is the first pixel, so that it occurs */
        key.gray = key.red = first_sample(rows, k->depth, 0);
        key.green = first_sample(rows, k->depth, 1);
        key.blue = first_sample(rows, k->depth, 2);
        png_set_tRNS(png, info, NULL, 0, &key);
    }
    png_write_info(png, info);
    for (int y = 0; y < h; y++)
        png_write_row(png, rows + y * rb);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    free(rows);
    return out;
}

static inline int fast_kind(const struct kind *k)
{
    return k->color == 3 || k->depth == 8;
}

static const struct kind kinds[] = {
    {0, 1, 0}, {0, 2, 0}, {0, 4, 0}, {0, 8, 0}, {0, 16, 0}, {0, 8, 1}, {0, 4, 1}, {0, 16, 1},
    {2, 8, 0}, {2, 16, 0},  {2, 8, 1},  {2, 16, 1}, {4, 8, 0}, {4, 16, 0}, {6, 8, 0},  {6, 16, 0},
    {3, 1, 0}, {3, 2, 0},  {3, 4, 0},  {3, 8, 0},  {3, 1, 1}, {3, 2, 3},  {3, 4, 16}, {3, 8, 1},
    {3, 8, 100}, {3, 8, 256},
};
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

/* write_kind_filtered with libpng's adaptive choice among all five filter types. */
static inline struct buf write_kind(const struct kind *k, int w, int h, size_t zbuf)
{
    return write_kind_filtered(k, w, h, zbuf, PNG_ALL_FILTERS);
}

#endif
