/* fuzz_inflate_spec.c — libFuzzer target: the speculative inflate (cpu_ref/inflate_spec.c), serial
 * and with phases 2 and 4 in segments, and the segment decode of its blocks (cpu_ref/inflate_seg.c)
 * against libdeflate's zlib decoder. Input: one mode byte, then the stream. Mode bit 0 writes a
 * valid zlib header, bit 1 rewrites the Adler-32 after the deflate data (so that mutations reach
 * the chain and the resolution rather than dying at the checksum), bits 2-3 ask for one byte more
 * or less than libdeflate gives, bits 4-7 pick the segments a block is cut into (1 to 256). Aborts
 * when inflspec_decode or inflseg_decode answers 0 and libdeflate, asked for the same size, does
 * not give the same bytes, when either answers anything but 0 or its declined code, when
 * inflseg_decode declines a stream inflspec_decode decodes, or when inflseg_spec_decode with
 * phases 2 and 4 in segments (the device's knob at 1) answers otherwise than inflspec_decode. */
#include <libdeflate.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "inflate_seg.h"
#include "inflate_spec.h"

#define FUZZ_MAX_OUT (1u << 20)

static uint8_t fz_out[FUZZ_MAX_OUT + 1], fz_ref[FUZZ_MAX_OUT + 1];

/* Aborts unless rc is 0 with libdeflate's out_len bytes for z, or `declined`. */
static void check_answer(struct libdeflate_decompressor *d, const uint8_t *z, size_t len, size_t out_len, int rc,
                         int declined)
{
    size_t got = 0;

    if (rc == declined)
        return;
    if (rc != 0 || libdeflate_zlib_decompress_ex(d, z, len, fz_ref, out_len, NULL, &got) != LIBDEFLATE_SUCCESS ||
        got != out_len || memcmp(fz_out, fz_ref, out_len))
        abort();
}

/* Replaces the 4 bytes after the raw deflate data with the Adler-32 of what it inflates to. */
static void fix_adler(struct libdeflate_decompressor *d, uint8_t *z, size_t len)
{
    size_t in = 0, got = 0, at;
    uint32_t a;

    if (len < 6 || libdeflate_deflate_decompress_ex(d, z + 2, len - 2, fz_ref, FUZZ_MAX_OUT, &in, &got) !=
                       LIBDEFLATE_SUCCESS)
        return;
    at = 2 + in;
    if (at + 4 > len)
        return;
    a = libdeflate_adler32(1, fz_ref, got);
    z[at] = (uint8_t)(a >> 24);
    z[at + 1] = (uint8_t)(a >> 16);
    z[at + 2] = (uint8_t)(a >> 8);
    z[at + 3] = (uint8_t)a;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct libdeflate_decompressor *d;
    uint8_t mode, *z;
    size_t len, got = 0, out_len;
    int rc, seg;

    if (size < 1)
        return 0;
    mode = data[0];
    len = size - 1;
    if (!(z = malloc(len + 1)) || !(d = libdeflate_alloc_decompressor()))
        abort();
    memcpy(z, data + 1, len);
    if ((mode & 1) && len >= 2) {
        z[0] = 0x78;
        z[1] = 0x9c;
    }
    if (mode & 2)
        fix_adler(d, z, len);
    if (libdeflate_zlib_decompress_ex(d, z, len, fz_ref, FUZZ_MAX_OUT, NULL, &got) != LIBDEFLATE_SUCCESS)
        got = (size_t)mode * 61;
    out_len = got;
    if ((mode >> 2 & 3) == 1)
        out_len = got + 1;
    else if ((mode >> 2 & 3) == 2 && got)
        out_len = got - 1;
    rc = inflspec_decode(z, len, fz_out, out_len, NULL);
    check_answer(d, z, len, out_len, rc, INFLSPEC_DECLINED);
    seg = inflseg_decode(z, len, fz_out, out_len, 1u + (mode >> 4) * 17u, NULL, NULL);
    check_answer(d, z, len, out_len, seg, INFLSEG_DECLINED);
    if (rc == 0 && seg != 0) /* the segments decline only what the serial decode declines */
        abort();
    seg = inflseg_spec_decode(z, len, fz_out, out_len, 1, NULL); /* phases 2 and 4 in segments */
    check_answer(d, z, len, out_len, seg, INFLSPEC_DECLINED);
    if (seg != rc)
        abort();
    libdeflate_free_decompressor(d);
    free(z);
    return 0;
}
