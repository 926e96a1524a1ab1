/* image.h — the plain 8-bit interleaved image type shared by every layer. */
#ifndef EDGED_IMAGE_H
#define EDGED_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Channels: 1 gray, 2 gray+alpha, 3 RGB, 4 RGBA. Rows are stride bytes apart (stride >= w*ch).
 * packed (1 channel only): a binary map of 1-bit samples, 8 pixels per byte, the leftmost in the
 * most significant bit (a PNG 1-bit row), stride >= (w+7)/8; the GPU returns edge maps so for
 * 1-bit requests (filter_plan accept_packed). The image owns px when it came from img_alloc
 * (which makes it unpacked); release with img_free. */
struct img {
    int w, h, ch;
    size_t stride;
    uint8_t *px;
    int packed;
};

/* Largest side and pixel count any layer accepts; request limits are at most these. */
#define IMG_MAX_SIDE 65535
#define IMG_MAX_PIXELS ((size_t)1 << 31)

/* Allocates a zeroed w*h*ch image with stride w*ch. Returns 0 or a negative EDGED_E_* code
 * (message in err, which may be NULL). */
int img_alloc(struct img *im, int w, int h, int ch, char *err);

/* 1 when a and b have pixels, the same size and channel count, and the same samples (strides may
 * differ); 0 otherwise. Both must be unpacked. */
int img_same(const struct img *a, const struct img *b);

/* The largest difference of two samples at the same place of unpacked images a and b, or -1 when
 * their width, height or channel count differ. */
int img_max_diff(const struct img *a, const struct img *b);

/* Frees the pixels and zeroes the struct; accepts NULL and an image never allocated. */
void img_free(struct img *im);

/* Sides 1..IMG_MAX_SIDE and at most IMG_MAX_PIXELS pixels: the bounds every layer holds an image
 * to. Returns 0, EDGED_E_PARAM (a side) or EDGED_E_IMAGE_TOO_LARGE (the pixel count), err says
 * which. */
int img_check_size(int w, int h, char *err);

/* *out = a*b; returns 0, or -1 when the product overflows size_t. */
int size_mul(size_t a, size_t b, size_t *out);

/* Whether channel count ch carries alpha as its last channel (2 or 4). */
static inline int img_has_alpha(int ch) { return ch == 2 || ch == 4; }

#ifdef __cplusplus
}
#endif
#endif
