/* gconv_jpeg_internal.h — what the nvJPEG files share: the nvJPEG state of a context and its errors
 * (gconv_jpeg.cu), made on first use, for the decodes and JPEG jobs (gconv_jpeg_decode.cu) and the
 * encodes (gconv_jpeg_encode.cu). NVJPEG=1 builds, .cu files only. */
#ifndef EDGED_GCONV_JPEG_INTERNAL_H
#define EDGED_GCONV_JPEG_INTERNAL_H

#include <nvjpeg.h>

#include "gconv_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The nvJPEG objects of one context. hw is the hardware engine's handle (NULL on a GPU without
 * JPEG engines); sw the default backend's, which also serves what the engine refuses and every
 * encode. Decodes run on s_dec; ev_dec marks the end of the last batch for the job streams. enc
 * serves the encodes that wait for their result (host images, fallbacks); each job stream has an
 * encoder of its own, so that the encodes of results queue behind their jobs without a wait. */
#define GJPEG_TIMED 8

struct gjpeg {
    nvjpegHandle_t hw, sw;
    nvjpegJpegState_t hw_state, sw_state;
    nvjpegJpegStream_t parse;
    nvjpegEncoderState_t enc;
    nvjpegEncoderParams_t enc_params;
    nvjpegEncoderState_t enc_s[GCONV_MAX_STREAMS]; /* made on a stream's first encode */
    nvjpegEncoderParams_t par_s[GCONV_MAX_STREAMS];
    cudaStream_t s_dec;
    cudaEvent_t ev_dec;
    /* the device time of the last GJPEG_TIMED batches: events around each on s_dec, and how many
     * batches were recorded and read (stage [5] of the profile) */
    cudaEvent_t ev_t0[GJPEG_TIMED], ev_t1[GJPEG_TIMED];
    unsigned long long t_rec, t_read;
    uint8_t *d_raw[GCONV_MAX_STREAMS]; /* per stream: the decode before orientation */
    size_t raw_cap[GCONV_MAX_STREAMS];
    long long hw_pre_px; /* the engine's buffers were preallocated for a batch of images this large */
    double prof_ms[GCONV_JPEG_STAGES];
};

/* Turns a failed nvJPEG call into a code. Allocation is EDGED_E_GPU_OOM; a failure with a CUDA
 * error pending is classified by gctx_fail (sticky errors kill the context); anything else is
 * about the data or what the library supports, GCONV_E_JPEG_REFUSED: the CPU codec serves that
 * image, or names its fault. */
int gjpeg_fail(struct gconv_ctx *ctx, nvjpegStatus_t st, const char *what, char *err);

/* nvJPEG's name of status st, for messages. */
const char *gjpeg_status_name(nvjpegStatus_t st);

/* Reads data's headers with nvJPEG (gconv_jpeg_head.cu): size and channels with sw's parser, and
 * engine from hw's own check on parse, a parse stream of hw (hw or parse NULL: engine 0). Adds the
 * check's milliseconds to *check_ms (may be NULL). Returns 0, or GCONV_E_JPEG_REFUSED (headers
 * nvJPEG cannot parse, a component count it does not decode) with the message in err. */
int gjpeg_read_head(nvjpegHandle_t sw, nvjpegHandle_t hw, nvjpegJpegStream_t parse, const uint8_t *data,
                    size_t len, struct gconv_jpeg_head *head, double *check_ms, char *err);

/* Adds the device time of the timed batches that have ended, oldest first, to stage [5] of the
 * profile. */
void gjpeg_time_read(struct gjpeg *g);

/* In a function with ctx, `int rc`, err and a label `out`: a failed call sets rc (gjpeg_fail) and
 * jumps to out; GCTX_CU (gconv_internal.h) does the same for CUDA calls. */
#define GJPEG_NVJ(call)                                                                                      \
    do {                                                                                                     \
        nvjpegStatus_t st_ = (call);                                                                         \
        if (st_ != NVJPEG_STATUS_SUCCESS) {                                                                  \
            rc = gjpeg_fail(ctx, st_, #call, err);                                                           \
            goto out;                                                                                        \
        }                                                                                                    \
    } while (0)

/* ctx's nvJPEG state, made on first use (gconv calls on one context come from one thread). */
int gjpeg_get(struct gconv_ctx *ctx, struct gjpeg **out, char *err);

/* Enqueues the encode of stream s's result behind its job with the stream's own encoder, and moves
 * the job's end (ev_down, which gconv_poll and gconv_finish wait for) behind it. A result nvJPEG
 * does not encode (a packed map, 2 or 4 channels) or a failed enqueue leaves jpeg_enc 0:
 * gconv_jpeg_encode_result then encodes as before, or refuses. Returns 0 or why not (a CUDA error
 * that killed the context shows in gconv_is_dead). */
int gjpeg_encode_behind(struct gconv_ctx *ctx, struct gjpeg *g, int s, int quality);

#ifdef __cplusplus
}
#endif
#endif
