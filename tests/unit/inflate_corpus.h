/* inflate_corpus.h — the zlib streams the inflate tests (host and device) replay: generated data
 * compressed by zlib and libdeflate in every level and strategy, mixed block types, tiny streams,
 * and the IDAT streams of PngSuite; each with libdeflate's verdict as the expected answer. */
#ifndef EDGED_INFLATE_CORPUS_H
#define EDGED_INFLATE_CORPUS_H

#include <dirent.h>
#include <libdeflate.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "pngbuf.h"

/* One stream: its bytes, the out_len asked for and libdeflate's answer for that out_len
 * (ok: exactly out_len bytes, want). */
struct icase {
    char name[96];
    uint8_t *z, *want;
    size_t zlen, out_len;
    int ok;
};

struct icorpus {
    struct icase *c;
    int n, cap;
    uint64_t seed;
};

/* The run's seed: EDGED_TEST_SEED, else the time; printed so that a failure can be replayed. */
static inline uint64_t icorpus_seed(void)
{
    const char *env = getenv("EDGED_TEST_SEED");
    uint64_t seed = env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL);

    printf("seed %llu (EDGED_TEST_SEED)\n", (unsigned long long)seed);
    return seed;
}

/* Damaged streams per case of the damage tests: EDGED_INFLATE_DAMAGE, default 150. */
static inline int icorpus_damage_rounds(void)
{
    const char *env = getenv("EDGED_INFLATE_DAMAGE");

    return env ? atoi(env) : 150;
}

static inline uint32_t icorpus_rand(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*s >> 33);
}

/* Adds a stream (copied) with libdeflate's verdict for out_len bytes. */
static inline void icorpus_add(struct icorpus *k, const char *name, const uint8_t *z, size_t zlen, size_t out_len)
{
    struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
    struct icase *c;
    size_t got = 0;

    if (k->n == k->cap) {
        k->cap = k->cap * 2 + 16;
        if (!(k->c = realloc(k->c, (size_t)k->cap * sizeof(*k->c))))
            abort();
    }
    c = &k->c[k->n++];
    snprintf(c->name, sizeof(c->name), "%.95s", name);
    c->z = malloc(zlen ? zlen : 1);
    c->want = malloc(out_len ? out_len : 1);
    if (!d || !c->z || !c->want)
        abort();
    if (zlen)
        memcpy(c->z, z, zlen);
    c->zlen = zlen;
    c->out_len = out_len;
    c->ok = libdeflate_zlib_decompress_ex(d, z, zlen, c->want, out_len, NULL, &got) == LIBDEFLATE_SUCCESS &&
            got == out_len;
    libdeflate_free_decompressor(d);
}

static inline void icorpus_free(struct icorpus *k)
{
    int i;

    for (i = 0; i < k->n; i++) {
        free(k->c[i].z);
        free(k->c[i].want);
    }
    free(k->c);
    k->c = NULL;
    k->n = k->cap = 0;
}

/* Data of kind 0 random, 1 photograph-like (PNG rows after the Sub filter: a filter byte, then
 * small residuals), 2 flat, 3 repetitive text. */
static inline uint8_t *icorpus_data(int kind, size_t n, uint64_t *s)
{
    uint8_t *d = malloc(n ? n : 1);
    size_t i, row = 3 * 683 + 1;
    static const char words[] = "edge convolution kernel stream block window marker ";

    if (!d)
        abort();
    for (i = 0; i < n; i++) {
        size_t x = i % row, y = i / row;
        switch (kind) {
        case 0: d[i] = (uint8_t)icorpus_rand(s); break;
        case 1: /* Sub-filtered rows of a photograph: small residuals, a larger step now and then */
            d[i] = x == 0 ? 1
                          : (uint8_t)(icorpus_rand(s) % 9 + icorpus_rand(s) % 9 - 8 +
                                      (x % 97 == 0 ? (int)(y % 29) : 0));
            break;
        case 2: d[i] = 0x7f; break;
        default: d[i] = (uint8_t)words[(i * 7 / 5 + i / 997) % (sizeof(words) - 1)]; break;
        }
    }
    return d;
}

/* zlib's deflate with the given knobs; returns the stream (malloc) and its length in *zlen. */
static inline uint8_t *icorpus_zlib(const uint8_t *d, size_t n, int level, int mem, int strategy, size_t *zlen)
{
    z_stream zs;
    uint8_t *z;
    size_t cap;

    memset(&zs, 0, sizeof(zs));
    if (deflateInit2(&zs, level, Z_DEFLATED, 15, mem, strategy) != Z_OK)
        abort();
    cap = deflateBound(&zs, (uLong)n) + n / 8 + 1024;
    if (!(z = malloc(cap)))
        abort();
    zs.next_in = (Bytef *)d;
    zs.avail_in = (uInt)n;
    zs.next_out = z;
    zs.avail_out = (uInt)cap;
    if (deflate(&zs, Z_FINISH) != Z_STREAM_END)
        abort();
    *zlen = zs.total_out;
    deflateEnd(&zs);
    return z;
}

/* One stream whose blocks change type: stored, fixed, dynamic, in thirds, by deflateParams. */
static inline uint8_t *icorpus_mixed(const uint8_t *d, size_t n, size_t *zlen)
{
    static const int lv[3] = {0, 1, 6}, st[3] = {Z_DEFAULT_STRATEGY, Z_FIXED, Z_DEFAULT_STRATEGY};
    size_t cap = compressBound((uLong)n) + n / 8 + 1024, part = n / 3;
    z_stream zs;
    uint8_t *z;
    int i;

    memset(&zs, 0, sizeof(zs));
    if (!(z = malloc(cap)) || deflateInit(&zs, lv[0]) != Z_OK)
        abort();
    zs.next_out = z;
    zs.avail_out = (uInt)cap;
    for (i = 0; i < 3; i++) {
        if (i && deflateParams(&zs, lv[i], st[i]) != Z_OK)
            abort();
        zs.next_in = (Bytef *)d + i * part;
        zs.avail_in = (uInt)(i == 2 ? n - 2 * part : part);
        if (deflate(&zs, i == 2 ? Z_FINISH : Z_NO_FLUSH) != (i == 2 ? Z_STREAM_END : Z_OK))
            abort();
    }
    *zlen = zs.total_out;
    deflateEnd(&zs);
    return z;
}

/* A stream with a false candidate: d's first hl bytes (n > hl) are overwritten with the first bytes
 * of zlib's level-6 stream of photograph-like data after its header (a dynamic block's header and
 * data, byte-aligned) and stored in a block of their own (level 0), the rest at level 6. */
static inline uint8_t *icorpus_false_header(uint8_t *d, size_t n, size_t hl, uint64_t *seed, size_t *zlen)
{
    size_t n0 = 30000, zl0, cap = compressBound((uLong)n) + 1024;
    uint8_t *d0 = icorpus_data(1, n0, seed), *z0 = icorpus_zlib(d0, n0, 6, 8, Z_DEFAULT_STRATEGY, &zl0), *z;
    z_stream zs;

    memset(&zs, 0, sizeof(zs));
    if (n <= hl || zl0 < hl + 2 || !(z = malloc(cap)) || deflateInit(&zs, 0) != Z_OK)
        abort();
    memcpy(d, z0 + 2, hl);
    zs.next_out = z;
    zs.avail_out = (uInt)cap;
    zs.next_in = d;
    zs.avail_in = (uInt)hl;
    if (deflate(&zs, Z_NO_FLUSH) != Z_OK || deflateParams(&zs, 6, Z_DEFAULT_STRATEGY) != Z_OK)
        abort();
    zs.avail_in = (uInt)(n - hl);
    if (deflate(&zs, Z_FINISH) != Z_STREAM_END)
        abort();
    *zlen = zs.total_out;
    deflateEnd(&zs);
    free(z0);
    free(d0);
    return z;
}

/* Adds zlib's stream of d with these knobs. */
static inline void icorpus_add_zlib(struct icorpus *k, const char *what, const uint8_t *d, size_t n, int level,
                                    int mem, int strategy)
{
    char name[96];
    size_t zl;
    uint8_t *z = icorpus_zlib(d, n, level, mem, strategy, &zl);

    snprintf(name, sizeof(name), "%s n=%zu zlib l%d m%d s%d", what, n, level, mem, strategy);
    icorpus_add(k, name, z, zl, n);
    free(z);
}

static inline void icorpus_add_libdeflate(struct icorpus *k, const char *what, const uint8_t *d, size_t n, int level)
{
    struct libdeflate_compressor *c = libdeflate_alloc_compressor(level);
    size_t cap = libdeflate_zlib_compress_bound(c, n), zl;
    uint8_t *z = malloc(cap);
    char name[96];

    if (!c || !z || !(zl = libdeflate_zlib_compress(c, d, n, z, cap)))
        abort();
    snprintf(name, sizeof(name), "%s n=%zu libdeflate l%d", what, n, level);
    icorpus_add(k, name, z, zl, n);
    libdeflate_free_compressor(c);
    free(z);
}

/* The generated streams: every kind at sizes around the block and window limits with the default
 * level, every zlib level, strategy and two memLevels and every libdeflate level on one size,
 * mixed block types, a false candidate (icorpus_false_header), and the empty and one-byte streams. */
static inline void icorpus_generated(struct icorpus *k, size_t big)
{
    static const char *kinds[4] = {"random", "photo", "flat", "text"};
    static const size_t sizes[] = {0, 1, 2, 100, 32767, 32768, 32769, 65535, 65536, 65537};
    static const int strategies[] = {Z_FILTERED, Z_HUFFMAN_ONLY, Z_RLE, Z_FIXED};
    static const uint8_t tiny[] = {0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01};
    int kind, l;
    size_t i, zl;

    /* the empty stream (fixed block, end of block at once) and every prefix of it */
    for (i = 0; i <= sizeof(tiny); i++) {
        char name[96];
        snprintf(name, sizeof(name), "empty stream, first %zu bytes", i);
        icorpus_add(k, name, tiny, i, 0);
    }
    for (kind = 0; kind < 4; kind++) {
        uint8_t *d = icorpus_data(kind, big, &k->seed);
        uint8_t *z;
        char name[96];
        for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
            icorpus_add_zlib(k, kinds[kind], d, sizes[i], 6, 8, Z_DEFAULT_STRATEGY);
        for (l = 0; l <= 9; l++)
            icorpus_add_zlib(k, kinds[kind], d, big, l, 8, Z_DEFAULT_STRATEGY);
        for (i = 0; i < 4; i++)
            icorpus_add_zlib(k, kinds[kind], d, big, 6, 8, strategies[i]);
        icorpus_add_zlib(k, kinds[kind], d, big, 6, 1, Z_DEFAULT_STRATEGY);
        icorpus_add_zlib(k, kinds[kind], d, big, 9, 9, Z_DEFAULT_STRATEGY);
        for (l = 0; l <= 12; l++)
            icorpus_add_libdeflate(k, kinds[kind], d, big, l);
        z = icorpus_mixed(d, big, &zl);
        snprintf(name, sizeof(name), "%s n=%zu stored+fixed+dynamic", kinds[kind], big);
        icorpus_add(k, name, z, zl, big);
        free(z);
        z = icorpus_false_header(d, big, 300, &k->seed, &zl); /* d's first bytes change: last */
        snprintf(name, sizeof(name), "%s n=%zu a stored dynamic header, then level 6", kinds[kind], big);
        icorpus_add(k, name, z, zl, big);
        free(z);
        free(d);
    }
}

/* The streams the damage tests break: photograph-like data at level 6 and with fixed codes, text at
 * level 9, and the stored+fixed+dynamic mix. */
static inline void icorpus_damage_set(struct icorpus *k, uint64_t *seed)
{
    uint8_t *d = icorpus_data(1, 40000, seed), *t = icorpus_data(3, 40000, seed), *z;
    size_t zl;

    k->seed = *seed;
    icorpus_add_zlib(k, "photo", d, 40000, 6, 8, Z_DEFAULT_STRATEGY);
    icorpus_add_zlib(k, "text", t, 40000, 9, 8, Z_DEFAULT_STRATEGY);
    icorpus_add_zlib(k, "photo fixed", d, 20000, 6, 8, Z_FIXED);
    z = icorpus_mixed(t, 40000, &zl);
    icorpus_add(k, "mixed", z, zl, 40000);
    free(z);
    free(d);
    free(t);
}

static inline uint32_t icorpus_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* PngSuite's folder: EDGED_PNGSUITE, else ../shared/pngsuite (as the PNG tests). */
static inline const char *icorpus_pngsuite_dir(void)
{
    return getenv("EDGED_PNGSUITE") ? getenv("EDGED_PNGSUITE") : "../shared/pngsuite";
}

/* Appends the joined IDAT payloads of the PNG file at path to idat. Returns 0, -1 when it cannot
 * be read. */
static inline int icorpus_read_idat(const char *path, struct buf *idat)
{
    struct buf file = {0};
    uint8_t tmp[65536];
    size_t n, pos = 8;
    FILE *f = fopen(path, "rb");

    if (!f)
        return -1;
    while ((n = fread(tmp, 1, sizeof(tmp), f)) > 0)
        buf_add(&file, tmp, n);
    fclose(f);
    while (file.len >= 8 && pos + 12 <= file.len) {
        uint32_t len = icorpus_be32(file.p + pos);
        if (len > file.len - pos - 12)
            break;
        if (!memcmp(file.p + pos + 4, "IDAT", 4))
            buf_add(idat, file.p + pos + 8, len);
        pos += 12 + (size_t)len;
    }
    free(file.p);
    return 0;
}

/* The IDAT stream of every PngSuite file (icorpus_pngsuite_dir; out_len: what libdeflate gives
 * from a large buffer, or 1 when it fails). Returns how many files were read, -1 without the folder. */
static inline int icorpus_pngsuite(struct icorpus *k)
{
    const char *dir = icorpus_pngsuite_dir();
    DIR *dd = opendir(dir);
    struct dirent *e;
    int files = 0;

    if (!dd)
        return -1;
    while ((e = readdir(dd))) {
        char path[512];
        struct buf idat = {0};
        uint8_t empty[1] = {0}, *raw;
        size_t got = 0, cap = 1 << 24;
        struct libdeflate_decompressor *d;
        if (!strstr(e->d_name, ".png"))
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (icorpus_read_idat(path, &idat))
            continue;
        if (!(raw = malloc(cap)) || !(d = libdeflate_alloc_decompressor()))
            abort();
        if (libdeflate_zlib_decompress_ex(d, idat.p ? idat.p : empty, idat.len, raw, cap, NULL, &got) !=
            LIBDEFLATE_SUCCESS)
            got = 1;
        libdeflate_free_decompressor(d);
        icorpus_add(k, e->d_name, idat.p ? idat.p : empty, idat.len, got);
        free(raw);
        free(idat.p);
        files++;
    }
    closedir(dd);
    return files;
}

#endif
