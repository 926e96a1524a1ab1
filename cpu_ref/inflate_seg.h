/* inflate_seg.h — one deflate block decoded in segments of its bit range (the device's plan of a
 * thread per segment), run one segment after another on the host through inflate_seg_core.h. */
#ifndef EDGED_INFLATE_SEG_H
#define EDGED_INFLATE_SEG_H

#include <stdint.h>

#include "errors.h"
#include "inflate_seg_core.h"
#include "inflate_spec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* inflseg_block's answer for a block it does not decode (stored, a header or data that does not
 * decode as the chain said): the serial decode's verdict stands. */
#define INFLSEG_DECLINED 1

/* What one block's segment decode did, for tests and the docs. */
struct inflseg_stats {
    uint32_t segments;    /* segments the data bits were cut into */
    uint32_t rounds;      /* sync rounds that decoded something (1..segments) */
    uint64_t first_steps; /* steps the segments decoded in round 0 */
    uint64_t later_steps; /* steps they decoded in the rounds after it */
    uint64_t block_steps; /* steps of the block itself (what the write decodes) */
    uint32_t reused;      /* blocks whose states came from phase 2's save instead of the sync */
};

/* Phase 2's saves of synced segment states for phase 4 (inflate_seg_core.h, "Saves"): an area of
 * cap u32 words of which the first `used` hold saves. */
struct inflseg_save {
    uint32_t *w;
    uint64_t cap, used;
};

/* Decodes the Huffman block whose header starts at start_bit of in[0..nbytes) and whose
 * end-of-block code ends at end_bit (as the chain found them), len bytes at output position
 * out_off, in nseg segments of its data bits (0: as the device cuts it, infl_seg_count with
 * INFL_SEG_DEV_MAX): writes sym[out_off .. out_off + len) as u32 symbols,
 * bytes and INFL_MARK + position for bytes before their segment. st may be NULL. Returns 0,
 * INFLSEG_DECLINED (sym's range undefined), or EDGED_E_PARAM / EDGED_E_NOMEM with err. */
int inflseg_block(const uint8_t *in, uint64_t nbytes, uint64_t start_bit, uint64_t end_bit, uint64_t out_off,
                  uint64_t len, uint32_t nseg, uint32_t *sym, struct inflseg_stats *st,
                  char err[EDGED_ERR_LEN]);

/* Walks the blocks of the deflate data in[0..nbytes) from bit 16 with the serial decode: fills
 * bk[0..*n) (at most max) and *end_bit, where the final block ends. Returns 0 when the final block
 * ends with exactly out_len bytes in all, INFLSEG_DECLINED otherwise, or EDGED_E_NOMEM with err. */
int inflseg_chain(const uint8_t *in, uint64_t nbytes, uint64_t out_len, struct infl_blk *bk, uint32_t max,
                  uint32_t *n, uint64_t *end_bit, char err[EDGED_ERR_LEN]);

/* Phase 4 with segments: every block bk[0..n) of the chain (end_bit: where the final one ends) at
 * its offset in sym, stored ones copied, Huffman ones by inflseg_block in nseg segments, their
 * states from the save bk[i].seg of sv (may be NULL) where it has the block's cut. st (may be NULL)
 * adds up the blocks' stats. Returns 0, INFLSEG_DECLINED, or EDGED_E_* with err. */
int inflseg_place(const uint8_t *in, uint64_t nbytes, const struct infl_blk *bk, uint32_t n, uint64_t end_bit,
                  uint32_t nseg, const struct inflseg_save *sv, uint32_t *sym, struct inflseg_stats *st,
                  char err[EDGED_ERR_LEN]);

/* What phase 2 in segments did. */
struct inflseg_pass1_stats {
    uint64_t seg;    /* candidates the segments decided */
    uint64_t serial; /* candidates left to the serial decode */
    uint64_t ok;     /* candidates that decoded, either way */
};

/* Phase 2 of the speculative inflate in segments (inflate_seg_core.h, "Phase 2 in segments"): for
 * every candidate of the map keys[0..hsize) over the deflate data in[0..nbytes) (a stream of
 * out_len bytes), res[slot] as the serial decode (infl_block without output) gives it: from the
 * segment decode over the guess the bitmap cbits gives, else from the serial decode itself. A
 * candidate whose guess was its end saves its segments in sv (may be NULL) while there is room,
 * res[slot].seg its offset. st may be NULL. Returns 0 or EDGED_E_NOMEM with err. */
int inflseg_pass1(const uint8_t *in, uint64_t nbytes, uint64_t out_len, const uint64_t *keys, uint32_t hsize,
                  const uint32_t *cbits, struct infl_res *res, struct inflseg_save *sv,
                  struct inflseg_pass1_stats *st, char err[EDGED_ERR_LEN]);

/* inflseg_pass1 and inflseg_place (the device's cut) as inflspec_hooks; ctx a struct inflseg_save,
 * empty (used 0) at the start. */
extern const struct inflspec_hooks inflseg_hooks;

/* The speculative inflate (inflspec_decode) with phases 2 and 4 as the device's knob
 * EDGED_GPU_INFLATE_SEG picks them: seg 0 serially, 1 in segments (inflseg_hooks with a save area
 * of inflspec_save_words). The same answers; st as inflspec_decode's, with seg_cands, seg_serial
 * and seg_reused. */
int inflseg_spec_decode(const uint8_t *zlib, size_t len, uint8_t *out, size_t out_len, int seg,
                        struct inflspec_stats *st);

/* Inflates the zlib stream zlib[0..len) into exactly out_len bytes at out as inflspec_decode does,
 * but with every Huffman block decoded by inflseg_block in nseg segments (the chain by the serial
 * decode, stored blocks copied; nseg 0 as the device cuts each block). st (may be NULL) adds up the blocks' stats, rounds the most any
 * block took. Returns 0, INFLSEG_DECLINED (out undefined), or EDGED_E_* with err. */
int inflseg_decode(const uint8_t *zlib, size_t len, uint8_t *out, size_t out_len, uint32_t nseg,
                   struct inflseg_stats *st, char err[EDGED_ERR_LEN]);

#ifdef __cplusplus
}
#endif
#endif
