/* inflate_spec.h — the speculative parallel inflate of one zlib stream, run serially on the host
 * through the same core (inflate_spec_core.h) that gpu/ginflate_*.cu run on the device. */
#ifndef EDGED_INFLATE_SPEC_H
#define EDGED_INFLATE_SPEC_H

#include <stddef.h>
#include <stdint.h>

#include "inflate_spec_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* inflspec_decode's answer for any stream it does not decode (malformed, a stretch too long to
 * decode serially, a limit): the CPU decoder's verdict stands. */
#define INFLSPEC_DECLINED 1

/* What one decode did, for tests and the docs. */
struct inflspec_stats {
    uint64_t candidates;      /* bit offsets where a dynamic block header could start */
    uint64_t spec_ok;         /* candidates whose speculative decode succeeded */
    uint32_t blocks;          /* blocks of the chain */
    uint32_t spec_blocks;     /* of them taken from speculative decodes */
    uint32_t seq_blocks;      /* of them decoded by the chain itself (fixed, stored, missed) */
    uint64_t seg_cands;       /* candidates phase 2 in segments decided (inflseg_spec_decode) */
    uint64_t seg_serial;      /* candidates it left to the serial decode */
    uint32_t seg_reused;      /* blocks phase 4 in segments placed from phase 2's saves */
    uint64_t markers;         /* output symbols that were markers before resolution */
    int rounds;               /* pointer-jumping rounds that resolved them (the last found none) */
};

/* Candidate slots for a stream of in_len bytes (more found: declined) and the map's size. */
uint64_t inflspec_max_candidates(uint64_t in_len);
uint64_t inflspec_map_size(uint64_t in_len);

/* Entries of the device scan's list of the bit offsets that pass infl_head_plausible, for a stream
 * of in_len bytes (more: declined). */
uint64_t inflspec_max_plausible(uint64_t in_len);

/* u32 words of the candidate bitmap of nbytes bytes of deflate data: one bit per bit offset. */
uint64_t inflspec_cand_words(uint64_t nbytes);

/* u32 words of the area phase 2 in segments saves its synced segments in for phase 4, for a
 * stream of in_len bytes (full: phase 4 syncs itself). */
uint64_t inflspec_save_words(uint64_t in_len);

/* Phase 1: every bit offset of the deflate data z[0..nbytes) where a dynamic block header could
 * start goes into the map keys[0..hmask] (all INFL_EMPTY before) and is set in the bitmap cbits
 * (inflspec_cand_words, zero before); *found the count. Returns 0, or -1 past cap candidates. */
int inflspec_scan(const uint8_t *z, uint64_t nbytes, uint64_t *keys, uint32_t hmask, uint64_t cap, uint32_t *cbits,
                  uint64_t *found);

/* Inflates the zlib stream zlib[0..len) into exactly out_len bytes at out with the speculative
 * algorithm (candidate scan, speculative decodes, chain, placement, pointer jumping, Adler-32),
 * serially. Trailing bytes after the Adler-32 are ignored, as libdeflate does. st may be NULL.
 * Returns 0 (out holds the data), INFLSPEC_DECLINED (out undefined) or EDGED_E_NOMEM. */
int inflspec_decode(const uint8_t *zlib, size_t len, uint8_t *out, size_t out_len, struct inflspec_stats *st);

/* Phases 2 and 4 done another way (inflate_seg.c: in segments). pass1 fills res[slot] for every
 * candidate of the map keys[0..hsize) as the serial decode would (cbits: the scan's bitmap) and
 * may count into st; place writes the symbols of the chain bk[0..n) (end_bit: where the final
 * block ends) and may count into st. ctx is the caller's, the same for both. Each returns 0,
 * INFLSPEC_DECLINED or a negative EDGED_E_*. */
struct inflspec_hooks {
    int (*pass1)(const uint8_t *z, uint64_t nbytes, uint64_t out_len, const uint64_t *keys, uint32_t hsize,
                 const uint32_t *cbits, struct infl_res *res, void *ctx, struct inflspec_stats *st);
    int (*place)(const uint8_t *z, uint64_t nbytes, const struct infl_blk *bk, uint32_t n, uint64_t end_bit,
                 uint32_t *sym, void *ctx, struct inflspec_stats *st);
};

/* inflspec_decode with phases 2 and 4 by h with ctx (h NULL: serially, as inflspec_decode). */
int inflspec_decode_with(const uint8_t *zlib, size_t len, uint8_t *out, size_t out_len,
                         const struct inflspec_hooks *h, void *ctx, struct inflspec_stats *st);

/* The last two phases, for the drivers that place symbols their own way: resolves every marker of
 * sym[0..out_len) by pointer jumping (*markers: how many there were, *rounds: the rounds, the last
 * finding none) and writes the bytes to out; -1 when markers are left after INFL_JUMP_ROUNDS. */
int inflspec_resolve(uint32_t *sym, uint8_t *out, uint64_t out_len, uint64_t *markers, int *rounds);

/* Adler-32 of out[0..n), added up in the device's chunks. */
uint32_t inflspec_adler(const uint8_t *out, uint64_t n);

#ifdef __cplusplus
}
#endif
#endif
