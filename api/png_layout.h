/* png_layout.h — what a PNG's chunks say about its pixels, for the decoders that take the inflated
 * rows from there: the CPU's fast decoder (server/codec/png_decode.c) fills it, the device decoder
 * (gpu/gconv_png.cu) reads it. */
#ifndef EDGED_PNG_LAYOUT_H
#define EDGED_PNG_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#define PNG_COLOR_GRAY 0
#define PNG_COLOR_RGB 2
#define PNG_COLOR_PALETTE 3
#define PNG_COLOR_GRAY_ALPHA 4
#define PNG_COLOR_RGBA 6

/* A non-interlaced PNG of 8-bit gray, gray+alpha, RGB, RGBA, or a 1/2/4/8-bit palette. The
 * inflated stream is h rows of a filter byte and rowbytes bytes; the decoded image has out_ch
 * channels (pngio_decode's rules: tRNS adds alpha). */
struct png_layout {
    uint32_t w, h;
    int depth, color;
    int bpp;         /* filter unit: bytes per pixel, at least 1 */
    int out_ch;      /* channels of the decoded image */
    size_t rowbytes; /* bytes of one row without its filter byte */
    int has_key;     /* gray or RGB with tRNS: a pixel equal to key gets alpha 0, others 255 */
    uint8_t key[3];  /* the low byte of each sample of the tRNS key */
    uint8_t rgba[256][4]; /* palette images: entry i as RGBA (PLTE then tRNS; past PLTE 0,0,0; past
                           * tRNS alpha 255), the first out_ch bytes of which are the pixel */
};

#endif
