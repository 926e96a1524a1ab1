/* png_encode.c — the fast PNG encoder: row filters + libdeflate, or a run coder for 0/255 maps. */
#include "codec/png_encode.h"

#include <libdeflate.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "deflate_chunks.h"
#include "deflate_runs.h"
#include "errors.h"
#include "png_frame.h"

/* Level 4 and up: choose each row's filter by the smallest sum of absolute residuals (libpng's
 * heuristic); below, the Up filter: it was the fastest and about the smallest at zlib levels 1-3
 * (the table above pngio_enc_configure in png_io.c). */
#define PNGENC_ADAPTIVE_LEVEL 4
/* Two-level gray maps (0/255) get the run coder at level 1 only: zlib's higher levels can make
 * smaller files than it does. */
#define PNGENC_MAP_LEVEL 1

enum { PNGENC_NONE, PNGENC_SUB, PNGENC_UP, PNGENC_AVG, PNGENC_PAETH, PNGENC_NFILTERS };

static void pngenc_put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

void pngenc_pack_row1(const uint8_t *src, int w, uint8_t *dst)
{
    memset(dst, 0, ((size_t)w + 7) / 8);
    for (int x = 0; x < w; x++)
        if (src[x] >= 128)
            dst[x >> 3] |= (uint8_t)(0x80u >> (x & 7));
}

static inline int pngenc_paeth(int a, int b, int c)
{
    int pa = abs(b - c), pb = abs(a - c), pc = abs(a + b - 2 * c);

    return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/* Filters row cur (prev: the row above, zeros for the first) with filter f into out. */
static void pngenc_filter(int f, const uint8_t *restrict cur, const uint8_t *restrict prev, size_t n, int bpp,
                          uint8_t *restrict out)
{
    size_t i, b = (size_t)bpp < n ? (size_t)bpp : n;

    switch (f) {
    case PNGENC_NONE:
        memcpy(out, cur, n);
        break;
    case PNGENC_SUB:
        memcpy(out, cur, b);
        for (i = b; i < n; i++)
            out[i] = (uint8_t)(cur[i] - cur[i - bpp]);
        break;
    case PNGENC_UP:
        for (i = 0; i < n; i++)
            out[i] = (uint8_t)(cur[i] - prev[i]);
        break;
    case PNGENC_AVG:
        for (i = 0; i < b; i++)
            out[i] = (uint8_t)(cur[i] - (prev[i] >> 1));
        for (; i < n; i++)
            out[i] = (uint8_t)(cur[i] - ((cur[i - bpp] + prev[i]) >> 1));
        break;
    default:
        for (i = 0; i < b; i++)
            out[i] = (uint8_t)(cur[i] - prev[i]);
        for (; i < n; i++)
            out[i] = (uint8_t)(cur[i] - pngenc_paeth(cur[i - bpp], prev[i], prev[i - bpp]));
        break;
    }
}

/* Sum of the residuals as signed bytes, in absolute value: smaller usually deflates smaller. */
static size_t pngenc_cost(const uint8_t *p, size_t n)
{
    size_t s = 0;

    for (size_t i = 0; i < n; i++)
        s += p[i] < 128 ? p[i] : 256u - p[i];
    return s;
}

/* Writes filter byte + filtered row at dst; scratch holds one row per filter for the choice. */
static void pngenc_row(const uint8_t *cur, const uint8_t *prev, size_t n, int bpp, int adaptive,
                       uint8_t *scratch, uint8_t *dst)
{
    size_t best_cost = (size_t)-1;
    int best = PNGENC_NONE;

    if (!adaptive) {
        best = prev ? PNGENC_UP : PNGENC_NONE;
        dst[0] = (uint8_t)best;
        pngenc_filter(best, cur, prev, n, bpp, dst + 1);
        return;
    }
    for (int f = PNGENC_NONE; f < PNGENC_NFILTERS; f++) {
        size_t cost;

        pngenc_filter(f, cur, prev ? prev : scratch + PNGENC_NFILTERS * n, n, bpp, scratch + (size_t)f * n);
        cost = pngenc_cost(scratch + (size_t)f * n, n);
        if (cost < best_cost)
            best_cost = cost, best = f;
    }
    dst[0] = (uint8_t)best;
    memcpy(dst + 1, scratch + (size_t)best * n, n);
}

/* All rows, filtered, into raw ((rowbytes + 1) * h bytes). 1-bit rows are packed first (or taken
 * as they are from a packed map) and, like level 0, left unfiltered. */
static int pngenc_filter_all(const struct img *im, int level, int bit_depth, size_t rb, uint8_t *raw,
                             char *err)
{
    int adaptive = bit_depth == 8 && level >= PNGENC_ADAPTIVE_LEVEL;
    int filtered = bit_depth == 8 && level > 0;
    uint8_t *scratch = NULL;

    /* PNGENC_NFILTERS candidate rows plus a zero row above the first */
    if (adaptive && !(scratch = calloc(PNGENC_NFILTERS + 1, rb)))
        return edged_fail(err, EDGED_E_NOMEM, "cannot allocate PNG filter rows");
    for (int y = 0; y < im->h; y++) {
        const uint8_t *row = im->px + (size_t)y * im->stride;
        uint8_t *dst = raw + (size_t)y * (rb + 1);

        if (!filtered) {
            dst[0] = PNGENC_NONE;
            if (bit_depth == 1 && !im->packed)
                pngenc_pack_row1(row, im->w, dst + 1);
            else
                memcpy(dst + 1, row, rb);
            continue;
        }
        pngenc_row(row, y ? row - im->stride : NULL, rb, im->ch, adaptive, scratch, dst);
    }
    free(scratch);
    return 0;
}

/* ---- two-level maps: a purpose-built deflate stream ----
 * A gray image whose samples are all 0 or 255 (an edge map) is written unfiltered as one dynamic
 * Huffman block of literals and matches at distance 1 (runs) or one row back (a run pattern
 * repeated from the row above), parsed greedily. It is many times faster than an LZ77 match finder
 * on such maps and smaller than zlib's level 1 on edge maps; maps of very short runs go to
 * libdeflate. */

#define PNGENC_MAP_MAX_MATCH 258
#define PNGENC_MAP_MIN_MATCH 3
#define PNGENC_NLITLEN 286
#define PNGENC_NDIST 30
#define PNGENC_NCLEN 19
#define PNGENC_MAXBITS 15
#define PNGENC_CLEN_MAXBITS 7
/* tokens: a literal byte 0..255, or 256 + the length of a match at distance 1 */
#define PNGENC_TOK_MATCH 256
#define PNGENC_NTOK (PNGENC_TOK_MATCH + PNGENC_MAP_MAX_MATCH + 1)

static const uint16_t pngenc_len_base[29] = {3,  4,  5,  6,  7,  8,  9,  10, 11,  13,  15,  17,  19,  23, 27,
                                             31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
static const uint8_t pngenc_len_extra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                             2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
static const uint8_t pngenc_clen_order[PNGENC_NCLEN] = {16, 17, 18, 0, 8,  7, 9,  6, 10, 5,
                                                        11, 4,  12, 3, 13, 2, 14, 1, 15};

/* The deflate length code (index into the tables above) of each match length 0..258. */
static void pngenc_len_codes(uint8_t *code)
{
    for (int len = 0, c = 0; len <= PNGENC_MAP_MAX_MATCH; len++) {
        while (c < 28 && pngenc_len_base[c + 1] <= len)
            c++;
        code[len] = (uint8_t)c;
    }
}

/* Bit i set where p[i] differs from p[i - 1], for i = 0..63. */
static uint64_t pngenc_changes(const uint8_t *p)
{
    uint64_t m = 0;
#if defined(__SSE2__)
    for (int j = 0; j < 4; j++) {
        __m128i eq = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * j)),
                                    _mm_loadu_si128((const __m128i *)(p + 16 * j - 1)));

        m |= (uint64_t)(unsigned)_mm_movemask_epi8(eq) << (16 * j);
    }
    return ~m;
#else
    for (int i = 0; i < 64; i++)
        m |= (uint64_t)(p[i] != p[i - 1]) << i;
    return m;
#endif
}

/* Tokens of one run of byte v, len bytes long: the byte, then matches at distance 1 (or one or
 * two more literals) for the rest. Writes up to two entries past the tokens it returns (t, the new
 * count). Branch-free for runs up to 259 bytes: runs of different lengths follow unpredictably. */
static size_t pngenc_map_run(uint16_t *tok, size_t t, uint32_t *freq, unsigned v, size_t len)
{
    size_t rem = len - 1;
    int match;

    tok[t++] = (uint16_t)v;
    freq[v]++;
    for (; rem > PNGENC_MAP_MAX_MATCH; rem -= PNGENC_MAP_MAX_MATCH) {
        tok[t++] = PNGENC_TOK_MATCH + PNGENC_MAP_MAX_MATCH;
        freq[PNGENC_TOK_MATCH + PNGENC_MAP_MAX_MATCH]++;
    }
    match = rem >= PNGENC_MAP_MIN_MATCH;
    tok[t] = (uint16_t)(match ? PNGENC_TOK_MATCH + rem : v);
    tok[t + 1] = (uint16_t)v;
    freq[v] += match ? 0 : (uint32_t)rem;
    freq[PNGENC_TOK_MATCH + rem] += (uint32_t)match;
    return t + (match ? 1 : rem);
}

/* Where a parse of the unfiltered stream (a 0 filter byte before each row) stands: the run being
 * read (its byte and start) and the tokens so far. */
struct pngenc_parse {
    uint16_t *tok;
    uint32_t *freq;
    size_t t, cap, start;
    unsigned v;
};

/* Ends the current run at stream position q, where byte v starts the next; 0 if over cap. */
static int pngenc_map_change(struct pngenc_parse *ps, size_t q, unsigned v)
{
    if (ps->t + 3 + (q - ps->start) / PNGENC_MAP_MAX_MATCH > ps->cap)
        return 0;
    ps->t = pngenc_map_run(ps->tok, ps->t, ps->freq, ps->v, q - ps->start);
    ps->start = q;
    ps->v = v;
    return 1;
}

/* The runs of one row (w bytes, from stream position at on), found 64 bytes at a time. */
static int pngenc_map_row(struct pngenc_parse *ps, const uint8_t *row, size_t w, size_t at)
{
    size_t x = 1;

    if (row[0] != ps->v && !pngenc_map_change(ps, at, row[0]))
        return 0;
    for (; x + 64 <= w; x += 64)
        for (uint64_t m = pngenc_changes(row + x); m; m &= m - 1) {
            size_t i = x + (size_t)__builtin_ctzll(m);

            if (!pngenc_map_change(ps, at + i, row[i]))
                return 0;
        }
    for (; x < w; x++)
        if (row[x] != row[x - 1] && !pngenc_map_change(ps, at + x, row[x]))
            return 0;
    return 1;
}

/* Parses the unfiltered rows of im into tokens (counted in freq) without building the stream, and
 * takes its Adler-32. Returns the token count, or 0 when im is not a two-level map or more than
 * cap - 2 tokens would be needed. */
static size_t pngenc_map_parse(const struct img *im, uint16_t *tok, size_t cap, uint32_t *freq,
                               uint32_t *adler)
{
    static const uint8_t filter = PNGENC_NONE;
    struct pngenc_parse ps = {tok, freq, 0, cap, 0, filter};
    size_t w = (size_t)im->w, n = (w + 1) * (size_t)im->h;

    *adler = 1;
    for (int y = 0; y < im->h; y++) {
        const uint8_t *row = im->px + (size_t)y * im->stride;
        size_t at = (size_t)y * (w + 1);

        if (!defl_two_level(row, w))
            return 0;
        if (ps.v != filter && !pngenc_map_change(&ps, at, filter))
            return 0;
        if (!pngenc_map_row(&ps, row, w, at + 1))
            return 0;
        *adler = libdeflate_adler32(*adler, &filter, 1);
        *adler = libdeflate_adler32(*adler, row, w);
    }
    return pngenc_map_change(&ps, n, 0) ? ps.t : 0;
}

/* LSB-first bit writer into a buffer sized beforehand. */
struct pngenc_bits {
    uint8_t *p;
    uint64_t acc;
    int n;
};

/* n is at most 32: the buffer holds fewer than 32 bits between calls. */
static inline void pngenc_put(struct pngenc_bits *b, uint64_t v, int n)
{
    b->acc |= v << b->n;
    b->n += n;
    if (b->n >= 32) {
        for (int i = 0; i < 4; i++)
            *b->p++ = (uint8_t)(b->acc >> (8 * i));
        b->acc >>= 32;
        b->n -= 32;
    }
}

static void pngenc_flush(struct pngenc_bits *b)
{
    for (; b->n > 0; b->n -= 8, b->acc >>= 8)
        *b->p++ = (uint8_t)b->acc;
    b->n = 0;
}

/* The codes of one block: literal/length and distance lengths and codes, the code-length code. */
struct pngenc_block {
    uint32_t lit_freq[PNGENC_NLITLEN], dist_freq[PNGENC_NDIST], clen_freq[PNGENC_NCLEN];
    uint8_t lens[PNGENC_NLITLEN + PNGENC_NDIST], clen_len[PNGENC_NCLEN];
    uint16_t lit_code[PNGENC_NLITLEN], dist_code[PNGENC_NDIST], clen_code[PNGENC_NCLEN];
    uint8_t len_code[PNGENC_MAP_MAX_MATCH + 1];
    int nlit, ndist, nclen;
};

/* Builds the codes from the token counts; returns the block's size in bits. */
static size_t pngenc_block_plan(struct pngenc_block *k, const uint32_t *freq)
{
    const uint32_t *len_freq = freq + PNGENC_TOK_MATCH;
    uint8_t *ll = k->lens, *dl;
    size_t bits = 3 + 14;

    pngenc_len_codes(k->len_code);
    memcpy(k->lit_freq, freq, 256 * sizeof(*freq));
    k->lit_freq[256] = 1;
    for (int len = PNGENC_MAP_MIN_MATCH; len <= PNGENC_MAP_MAX_MATCH; len++) {
        k->lit_freq[257 + k->len_code[len]] += len_freq[len];
        k->dist_freq[0] += len_freq[len];
    }
    defl_huff_lengths(k->lit_freq, PNGENC_NLITLEN, PNGENC_MAXBITS, ll);
    for (k->nlit = PNGENC_NLITLEN; !ll[k->nlit - 1]; k->nlit--)
        ;
    dl = ll + k->nlit;
    defl_huff_lengths(k->dist_freq, PNGENC_NDIST, PNGENC_MAXBITS, dl);
    for (k->ndist = PNGENC_NDIST; !dl[k->ndist - 1]; k->ndist--)
        ;
    for (int i = 0; i < k->nlit + k->ndist; i++)
        k->clen_freq[ll[i]]++;
    defl_huff_lengths(k->clen_freq, PNGENC_NCLEN, PNGENC_CLEN_MAXBITS, k->clen_len);
    for (k->nclen = PNGENC_NCLEN; k->nclen > 4 && !k->clen_len[pngenc_clen_order[k->nclen - 1]]; k->nclen--)
        ;
    defl_huff_codes(ll, k->nlit, k->lit_code);
    defl_huff_codes(dl, k->ndist, k->dist_code);
    defl_huff_codes(k->clen_len, PNGENC_NCLEN, k->clen_code);
    bits += 3 * (size_t)k->nclen;
    for (int i = 0; i < k->nlit + k->ndist; i++)
        bits += k->clen_len[ll[i]];
    for (int s = 0; s < k->nlit; s++)
        bits += (size_t)k->lit_freq[s] * (ll[s] + (s > 256 ? pngenc_len_extra[s - 257] : 0));
    for (int s = 0; s < k->ndist; s++)
        bits += (size_t)k->dist_freq[s] * (dl[s] + (s < 4 ? 0 : s / 2 - 1));
    return bits;
}

/* Writes the block header and the tokens as one final dynamic block. Each token goes out as one
 * field from a table: a literal's code, or a match's length code, extra bits and distance code
 * (at most 15 + 5 + 1 bits: the distance code has two symbols, distance 1 and an unused one). */
static void pngenc_block_write(const struct pngenc_block *k, const uint16_t *tok, size_t t,
                               struct pngenc_bits *b)
{
    const uint8_t *ll = k->lens, *dl = ll + k->nlit;
    uint64_t code[PNGENC_NTOK] = {0};
    uint8_t bits[PNGENC_NTOK] = {0};

    for (int v = 0; v < 256; v++)
        code[v] = k->lit_code[v], bits[v] = ll[v];
    for (int len = PNGENC_MAP_MIN_MATCH; len <= PNGENC_MAP_MAX_MATCH; len++) {
        int c = k->len_code[len], sym = 257 + c, nb = ll[sym] + pngenc_len_extra[c];

        code[PNGENC_TOK_MATCH + len] = k->lit_code[sym] | (uint64_t)(len - pngenc_len_base[c]) << ll[sym] |
                                       (uint64_t)k->dist_code[0] << nb;
        bits[PNGENC_TOK_MATCH + len] = (uint8_t)(nb + dl[0]);
    }
    pngenc_put(b, 1 | 2 << 1, 3);
    pngenc_put(b, (uint32_t)(k->nlit - 257) | (uint32_t)(k->ndist - 1) << 5 | (uint32_t)(k->nclen - 4) << 10,
               14);
    for (int i = 0; i < k->nclen; i++)
        pngenc_put(b, k->clen_len[pngenc_clen_order[i]], 3);
    for (int i = 0; i < k->nlit + k->ndist; i++)
        pngenc_put(b, k->clen_code[ll[i]], k->clen_len[ll[i]]);
    for (size_t i = 0; i < t; i++)
        pngenc_put(b, code[tok[i]], bits[tok[i]]);
    pngenc_put(b, k->lit_code[256], ll[256]);
    pngenc_flush(b);
}

/* The zlib stream of a two-level gray map, at zoff in a new buffer *png sized for the PNG frame
 * around it. Returns 0, PNGENC_DECLINED (not such a map, or runs too short: libdeflate does
 * better) or EDGED_E_NOMEM. */
static int pngenc_map(const struct img *im, size_t raw_len, size_t zoff, uint8_t **png, size_t *zlen,
                      char *err)
{
    size_t cap = raw_len / 2 + 3, t, bytes;
    uint16_t *tok = malloc(cap * sizeof(*tok));
    struct pngenc_block *k = calloc(1, sizeof(*k));
    struct pngenc_bits b = {0};
    uint32_t adler, freq[PNGENC_NTOK] = {0};
    int rc = PNGENC_DECLINED;

    if (!tok || !k) {
        rc = edged_fail(err, EDGED_E_NOMEM, "cannot allocate the PNG map encoder");
        goto out;
    }
    if (!(t = pngenc_map_parse(im, tok, cap, freq, &adler)))
        goto out;
    bytes = 2 + (pngenc_block_plan(k, freq) + 7) / 8 + 4;
    if (!(*png = malloc(zoff + bytes + PNGFRAME_TAIL))) {
        rc = edged_fail(err, EDGED_E_NOMEM, "cannot allocate %zu bytes for a PNG", bytes);
        goto out;
    }
    b.p = *png + zoff;
    *b.p++ = 0x78; /* deflate, 32 KiB window, fastest-level flag: as libdeflate's level 1 */
    *b.p++ = 0x01;
    pngenc_block_write(k, tok, t, &b);
    pngenc_put32(b.p, adler);
    *zlen = (size_t)(b.p + 4 - (*png + zoff));
    rc = 0;
out:
    free(k);
    free(tok);
    return rc;
}

/* The filtered rows deflated by libdeflate, at zoff in a new buffer *png sized for the PNG frame
 * around it. */
static int pngenc_deflate(const struct img *im, int level, int bit_depth, size_t rb, size_t raw_len,
                          size_t zoff, uint8_t **png, size_t *zlen, char *err)
{
    struct libdeflate_compressor *z = NULL;
    uint8_t *raw = NULL;
    size_t bound;
    int rc;

    /* edged's levels 0..9 are libdeflate's: 0 stores, 1 is the fastest, 9 the smallest of the
     * greedy and lazy matchers (10-12, optimal parsing, cost many times more) */
    if (!(z = libdeflate_alloc_compressor(level)) || !(raw = malloc(raw_len))) {
        rc = edged_fail(err, EDGED_E_NOMEM, "cannot allocate the PNG encoder");
        goto out;
    }
    if ((rc = pngenc_filter_all(im, level, bit_depth, rb, raw, err)))
        goto out;
    bound = libdeflate_zlib_compress_bound(z, raw_len);
    if (!(*png = malloc(zoff + bound + PNGFRAME_TAIL))) {
        rc = edged_fail(err, EDGED_E_NOMEM, "cannot allocate %zu bytes for a PNG", bound);
        goto out;
    }
    *zlen = libdeflate_zlib_compress(z, raw, raw_len, *png + zoff, bound);
    if (*zlen == 0)
        rc = edged_fail(err, EDGED_E_INTERNAL, "PNG encode: deflate overflowed its bound");
out:
    free(raw);
    libdeflate_free_compressor(z);
    return rc;
}

int pngenc_encode(const struct img *im, int level, int bit_depth, uint8_t **out, size_t *out_len, char *err)
{
    size_t rb = bit_depth == 1 ? ((size_t)im->w + 7) / 8 : (size_t)im->w * (size_t)im->ch, raw_len, zlen = 0;
    size_t zoff = PNGFRAME_HEAD;
    uint8_t *png = NULL, *small;
    int rc = PNGENC_DECLINED;

    if (size_mul(rb + 1, (size_t)im->h, &raw_len))
        return edged_fail(err, EDGED_E_PARAM, "PNG encode: %dx%d image too large", im->w, im->h);
    if (bit_depth == 8 && im->ch == 1 && level == PNGENC_MAP_LEVEL)
        rc = pngenc_map(im, raw_len, zoff, &png, &zlen, err);
    if (rc == PNGENC_DECLINED)
        rc = pngenc_deflate(im, level, bit_depth, rb, raw_len, zoff, &png, &zlen, err);
    if (rc)
        goto out;
    if (zlen > PNGFRAME_MAX_IDAT) {
        rc = PNGENC_DECLINED;
        goto out;
    }
    *out_len = pngframe_write(png, zlen, im->w, im->h, im->ch, bit_depth);
    small = realloc(png, *out_len);
    *out = small ? small : png;
    png = NULL;
out:
    free(png);
    return rc;
}
