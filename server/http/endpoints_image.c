/* endpoints_image.c — POST /v1/filter and /v1/compare on the connection thread: read the upload
 * and its parameters, decode (codec slot), queue the job and wait for the worker, encode (codec
 * slot), answer. Every failure answers through http_respond_error, so there is one error format. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "gconv.h"
#include "params.h"
#include "codec/image_io.h"
#include "result.h"
#include "http/routes.h"
#include "jobs/jpeg_job.h"
#include "jobs/png_job.h"
#include "jobs/px_job.h"
#include "jobs/service.h"
#include "http/upload.h"

/* ---- upload and parameters ------------------------------------------------------------------ */

struct param_sink {
    struct params *p;
    char *err;
};

static int query_param(void *cls, const char *key, const char *value)
{
    struct param_sink *sink = cls;

    return params_set_text(sink->p, key, value, sink->err);
}

/* Query string, then the body (multipart fields and params, or a raw image/png body). */
static int read_upload(struct http_req *r, enum params_mode mode, struct upload *u, char *err)
{
    struct param_sink sink = {&u->p, err};
    const uint8_t *body;
    size_t len;
    int rc;

    memset(u, 0, sizeof(*u));
    params_init(&u->p, mode);
    if ((rc = http_req_query(r, query_param, &sink)) < 0)
        return rc;
    body = http_req_body(r, &len);
    return upload_parse(http_req_header(r, "Content-Type"), body, len, u, err);
}

static int wants_json(struct http_req *r, const struct params *p)
{
    if (p->output != PARAMS_OUTPUT_AUTO)
        return p->output == PARAMS_OUTPUT_JSON;
    return http_req_prefers(r, "application/json", "image/png");
}

/* The format the Accept header picks when `format` is absent: JPEG or WebP only when it ranks that
 * type above image/png and the other (ties keep PNG, then JPEG), so that wildcards keep PNG. */
static enum params_format accept_format(struct http_req *r)
{
    const char *png = imageio_out_mime(IMAGEIO_OUT_PNG), *jpeg = imageio_out_mime(IMAGEIO_OUT_JPEG);
    enum params_format f = http_req_prefers(r, jpeg, png) ? PARAMS_FORMAT_JPEG : PARAMS_FORMAT_PNG;

    if (http_req_prefers(r, imageio_out_mime(IMAGEIO_OUT_WEBP), f == PARAMS_FORMAT_JPEG ? jpeg : png))
        f = PARAMS_FORMAT_WEBP;
    return f;
}

#define ACCEPT_KEEPS_PNG "the Accept header ranks no image/jpeg or image/webp above image/png"

/* The answer's format: `format`, else what the Accept header picks (endpoint_filter has refused a
 * quality that the format would not take). */
static enum params_format answer_format(struct http_req *r, const struct params *p)
{
    int f = params_output_format(p, accept_format(r), NULL, NULL);

    return f < 0 ? PARAMS_FORMAT_PNG : (enum params_format)f;
}

static struct imageio_enc output_encoding(struct http_req *r, const struct params *p)
{
    return imageio_enc_of(p, answer_format(r, p));
}

/* Refuses, before any decode, a result past the answer format's side (WebP 16383; orientations
 * 5-8 swap the sides). */
static int check_output_size(struct http_req *r, const struct params *p, const struct imageio_head *head, char *err)
{
    int o = p->orientation == PARAMS_ORIENT_EXIF ? head->orientation : 1, swap = o >= 5 && o <= 8;

    return imageio_check_output(output_encoding(r, p).fmt, swap ? head->h : head->w, swap ? head->w : head->h, err);
}

/* ---- decode ------------------------------------------------------------------------------- */

/* Decodes in a codec slot the image whose header image_reserve read and held to the limits, so a
 * refused image never waits for a slot. */
static int decode_image(struct service *s, const struct params *p, const struct imageio_head *head, const uint8_t *d,
                        size_t n, struct img *in, struct result_times *t, char *err)
{
    long long px = (long long)head->w * head->h;
    double t0;
    int rc;

    t->codec_wait += service_codec_enter(s, px);
    t0 = clock_ms();
    rc = imageio_decode(d, n, &s->lim, head, p->orientation == PARAMS_ORIENT_EXIF, in, err);
    t->decode = clock_ms() - t0;
    service_codec_leave(s, px);
    return rc;
}

/* /v1/compare always runs cpu_serial (its reference), so no cheaper variant can be offered. */
static int compare_cost(struct service *s, const struct filter_plan *plan, int w, int h, char *err)
{
    double est = backend_cpu_seconds(s->backend, plan, w, h, VARIANT_CPU_SERIAL);

    if (est <= s->cfg->max_job_cpu_s)
        return 0;
    return edged_fail(err, EDGED_E_TOO_COSTLY, "/v1/compare runs cpu_serial as its reference: on %dx%d it is "
                      "estimated at %.0f CPU seconds, over --max-job-cpu-s %d; use a smaller image or kernel", w, h,
                      est, s->cfg->max_job_cpu_s);
}

/* Reads the image header once into *head (sniff and limits: a refused image costs no pixel
 * memory, slot or budget), then, before anything is decoded, refuses a job over --max-job-cpu-s
 * (the cost of the variant asked for; compare: cpu_serial) and, once the request's largest stage
 * fits in the memory budget, reserves its first: the image it decodes and the decoder's scratch
 * (service_bytes; *b tells the stages, b->hold + b->decode is taken). Parameters that make no plan
 * reserve nothing here (*b all 0): job_prepare refuses them with their own message. */
static int image_reserve(struct service *s, const struct upload *u, int compare, struct imageio_head *head,
                         struct service_bytes *b, char *err)
{
    struct filter_plan *plan = NULL; /* large (a pipeline's kernels): heap, not the connection's stack */
    char perr[EDGED_ERR_LEN];
    int rc;

    *b = (struct service_bytes){0};
    if ((rc = imageio_peek(u->image, u->image_len, &s->lim, head, err)) < 0 ||
        (rc = service_check_decode(s, head, err)) < 0)
        return rc;
    if (!(plan = malloc(sizeof(*plan))))
        return edged_fail(err, EDGED_E_NOMEM, "out of memory");
    if (params_plan(&u->p, head->ch, plan, perr) < 0) {
        rc = 0;
        goto out;
    }
    if ((rc = compare ? compare_cost(s, plan, head->w, head->h, err)
                      : service_check_cost(s, plan, head->w, head->h, u->p.variant, err)) < 0)
        goto out;
    if (compare)
        service_compare_bytes(s, plan, head->w, head->h, head->ch, b);
    else
        service_image_bytes(s, plan, u->p.variant, head->w, head->h, head->ch, b);
    if ((rc = budget_take_room(s->budget, b->hold + b->decode, b->peak, SERVICE_BUDGET_WAIT_MS, err)) < 0)
        *b = (struct service_bytes){0};
out:
    free(plan);
    return rc;
}

/* ---- the device a request names ------------------------------------------------------------ */

/* The index (backend order, as job->device takes it) of the CUDA device the request's `device`
 * names, into *index; -1 when it names none. Naming a device on the CPU backend, or one this server
 * does not drive, is EDGED_E_NO_CUDA (422), as a GPU variant is on the CPU backend; the message
 * lists the devices served. Checked before anything is decoded, and again by job_prepare. */
static int request_device(struct service *s, const struct params *p, int *index, char *err)
{
    char list[128] = "";
    size_t n = 0;

    *index = -1;
    if (!(p->given & PARAMS_F_DEVICE))
        return 0;
    if (!backend_has_gpu(s->backend))
        return edged_fail(err, EDGED_E_NO_CUDA, "device %d needs a GPU; the CPU backend is in use (%s)", p->device,
                          EDGED_GPU ? "no CUDA device in use" : "built without CUDA");
    if ((*index = backend_device_index(s->backend, p->device)) >= 0)
        return 0;
    for (int i = 0; i < backend_device_count(s->backend) && n < sizeof(list); i++)
        n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%d", i ? ", " : "",
                              backend_ordinal(backend_on(s->backend, i)));
    return edged_fail(err, EDGED_E_NO_CUDA, "device %d is not served here; devices: %s", p->device, list);
}

/* ---- jobs --------------------------------------------------------------------------------- */

/* Fills the job's plan and routing from the request; the job's input is already decoded. A CPU job
 * over --max-job-cpu-s is refused here, before it is queued. A GPU job of a request that names a
 * device is pinned to it. */
static int job_prepare(struct service *s, const struct params *p, struct job *job, char *err)
{
    int rc, dev;

    if ((rc = request_device(s, p, &dev, err)) < 0 || (rc = params_plan(p, job->in.ch, &job->plan, err)) < 0 ||
        (rc = service_check_cost(s, &job->plan, job->in.w, job->in.h, p->variant, err)) < 0)
        return rc;
    job->timeout_ms = s->cfg->job_timeout_s * 1000.0;
    job->variant = p->variant;
    job->block = p->block;
    job->large = service_is_large(s, (long long)job->in.w * job->in.h);
    if ((rc = backend_route(s->backend, job, err)) < 0)
        return rc;
    job->device = job->lane == LANE_GPU ? dev : -1;
    return 0;
}

/* Queues the job and waits for it; a client that leaves meanwhile cancels it. */
static int job_run(struct service *s, struct http_req *r, struct job *job, char *err)
{
    int rc;

    if ((rc = queue_push(s->q, job, err)) < 0)
        return rc;
    if ((rc = queue_wait_watch(s->q, job, http_req_alive, r, err)) == 0)
        metrics_queue_wait(s->m, job->t.queue);
    return rc;
}

static void stage_times(struct result_times *t, const struct job *job)
{
    t->queue = job->t.queue;
    t->upload = job->t.upload;
    t->kernel = job->t.kernel;
    t->download = job->t.download;
}

/* The backend a routed job was given to (its lane), as the metrics and the access log name it. */
static const char *job_backend(const struct job *job) { return job->lane == LANE_GPU ? "gpu" : "cpu"; }

/* The view of the GPU device a job back from its worker ran on last (job->ran_on, a device
 * index), or NULL: a CPU-lane job, or one no device took. */
static struct backend *job_gpu(struct service *s, const struct job *job)
{
    return job->lane == LANE_GPU && job->ran_on >= 0 ? backend_on(s->backend, job->ran_on) : NULL;
}

/* The backend view of the device a GPU job ran on (job may be NULL), or of the device the request
 * names, else the backend (device 0's view): what results name and measure against. */
static struct backend *device_view(struct service *s, const struct params *p, const struct job *job)
{
    struct backend *v = job ? job_gpu(s, job) : NULL;

    if (!v && (p->given & PARAMS_F_DEVICE))
        v = backend_on(s->backend, backend_device_index(s->backend, p->device));
    return v ? v : s->backend;
}

/* The access log's device of a job back from its worker, failed or not: its CUDA device number. */
static void note_device(struct service *s, struct http_req *r, const struct job *job)
{
    const struct backend *on = job_gpu(s, job);

    if (on)
        http_req_note_device(r, backend_ordinal(on));
}

/* The device a finished job ran on, as results name it: on a GPU variant the device of view (the
 * one that took it, device_view), else the CPU's threads. */
static const char *job_device(const struct backend *view, const struct job *job, char *buf, size_t cap)
{
    if (variant_is_gpu(job->used))
        return backend_device(view);
    snprintf(buf, cap, "cpu (%d thread%s)", job->threads, job->threads == 1 ? "" : "s");
    return buf;
}

/* ---- answers encoded on the device ------------------------------------------------------- */

/* Asks the GPU lane to encode a routed job's answer on the device as well: a JPEG answer of a job
 * whose JPEG input the device decodes (nvJPEG), a PNG answer of any GPU job unless --gpu-png 0.
 * Called once the job is routed, whatever its input.
 * The answer then sends those bytes; a refusal leaves the pixels to the CPU encoder. */
static void job_encode_on_device(struct service *s, struct http_req *r, const struct params *p,
                                 struct job *job)
{
    struct imageio_enc enc = output_encoding(r, p);

    if (job->lane != LANE_GPU)
        return;
    if (enc.fmt == IMAGEIO_OUT_JPEG && job->src && job->src_format == JOB_SRC_JPEG)
        job->enc = JOB_ENC_JPEG, job->enc_quality = p->quality;
    else if (enc.fmt == IMAGEIO_OUT_PNG && s->cfg->gpu_png)
        job->enc = JOB_ENC_PNG, job->enc_quality = enc.png_level, job->enc_depth = enc.bit_depth;
}

/* ---- JPEG left to the GPU (nvJPEG) --------------------------------------------------------- */

/* Whether nvJPEG's parser, on this thread (backend_jpeg_probe), sees in d the image the header
 * peek saw (head, before orientation): 1 yes, its reading kept in the job for the GPU worker, or
 * no probe is open (the worker reads the headers); 0 when nvJPEG refuses the file or reads another
 * size or channel count: the CPU decoder then serves it, or names its fault (counted as the
 * worker's refusals are). */
static int jpeg_probe_takes(struct service *s, const struct imageio_head *head, const uint8_t *d, size_t n,
                            struct job *job)
{
    const struct gconv_jpeg_head *h = &job->jpeg_head;
    char why[EDGED_ERR_LEN];
    int rc = backend_jpeg_probe(s->backend, d, n, &job->jpeg_head, why);

    if (rc == 0)
        return 1;
    if (rc > 0 && h->w == head->w && h->h == head->h && h->ch == head->ch)
        return job->jpeg_head_read = 1;
    jpegjob_count(JPEGJOB_CPU_DECODED);
    return 0;
}

/* When the GPU lane has nvJPEG, a JPEG that the header peek, nvJPEG's parser and the limits accept
 * goes to the job undecoded: the GPU worker decodes it in device memory (batched with other JPEG
 * jobs), and a JPEG result is encoded there too. Kinds nvJPEG never takes (CMYK, YCCK, RGB-coded,
 * arithmetic coding) stay on the CPU path, and so does a file that ends before its EOI marker:
 * nvJPEG decodes a truncated scan without an error, libjpeg-turbo refuses it (422, as on the CPU
 * backend). The decode stage of the request's times is then the reading of nvJPEG's parser.
 * Returns 1 when the job took the bytes (plan and route set; job->src points at d, the caller then
 * gives the job the body, job_take_body), 0 when the input goes through decode_image, or
 * job_prepare's error. */
static int job_take_jpeg(struct service *s, const struct params *p, const struct imageio_head *head,
                         const uint8_t *d, size_t n, struct job *job, struct result_times *t, char *err)
{
    double t0;
    int o, swap, rc;

    if (!s->cfg->gpu_jpeg || !backend_gpu_jpeg(s->backend) ||
        (p->variant != VARIANT_AUTO && !variant_is_gpu(p->variant)))
        return 0;
    if (head->fmt != IMAGEIO_JPEG || head->jpeg.arithmetic ||
        (head->jpeg.cs != JPEGIO_CS_YCBCR && head->jpeg.cs != JPEGIO_CS_GRAY) || !jpegio_complete(d, n))
        return 0;
    o = p->orientation == PARAMS_ORIENT_EXIF ? head->orientation : 1;
    swap = o >= 5 && o <= 8;
    job->in = (struct img){.w = swap ? head->h : head->w, .h = swap ? head->w : head->h, .ch = head->ch};
    if ((rc = job_prepare(s, p, job, err)) < 0)
        return rc;
    t0 = clock_ms();
    if (job->lane != LANE_GPU || !jpeg_probe_takes(s, head, d, n, job)) {
        img_free(&job->out);
        job->in = (struct img){0};
        job->jpeg_head_read = 0;
        return 0;
    }
    t->decode = clock_ms() - t0;
    job->src = d; /* borrowed: the request's body, which job_take_body then gives the job */
    job->src_len = n;
    job->orientation = o;
    return 1;
}

/* ---- PNG left to the GPU ------------------------------------------------------------------ */

/* When the GPU lane decodes PNGs on the device, a PNG whose layout the device takes (pngjob_take:
 * 8-bit gray, gray+alpha, RGB, RGBA, 1/2/4/8-bit palette, non-interlaced, nothing out of the
 * ordinary) goes to the job undecoded: the GPU worker inflates it in device memory, batched with
 * other PNG jobs; what the device declines there the worker decodes on the CPU. The backlog rule
 * (pngjob_gpu_ok) keeps it on the CPU path while the device is busier than the cores. The decode
 * stage of the request's times is then the host's part of the decode. Returns 1 when the job took
 * the bytes (plan and route set; job->src points at d, as job_take_jpeg's), 0 when the input goes
 * through decode_image, or job_prepare's error. */
static int job_take_png(struct service *s, const struct params *p, const struct imageio_head *head,
                        const uint8_t *d, size_t n, struct job *job, struct result_times *t, char *err)
{
    double t0;
    int rc;

    if (!s->cfg->gpu_png || !backend_gpu_png(s->backend) || head->fmt != IMAGEIO_PNG || head->png.interlaced ||
        (p->variant != VARIANT_AUTO && !variant_is_gpu(p->variant)))
        return 0;
    if (!pngjob_gpu_ok(n, fair_slots_waiting(&s->codec) == 0, (size_t)s->cfg->gpu_png_backlog_mb << 20))
        return 0;
    job->in = (struct img){.w = head->w, .h = head->h, .ch = head->ch};
    if ((rc = job_prepare(s, p, job, err)) < 0)
        return rc;
    t0 = clock_ms();
    if (job->lane != LANE_GPU || !pngjob_take(job, d, n)) { /* a kind the device does not take */
        img_free(&job->out);
        job->in = (struct img){0};
        return 0;
    }
    t->decode = clock_ms() - t0; /* the host's part: the chunk walk, CRCs and the stream's copy */
    return 1;
}

/* A job that took the compressed image (job_take_jpeg, job_take_png) points into the request's
 * body: the job now owns that buffer, and the budget reserved for it, so that a job abandoned at a
 * 504 or 499 keeps both until its worker lets it go. No copy of the image is made. The request
 * reads nothing of its body after this but through u (parsed before), whose image lives in the
 * block while the endpoint holds its reference to the job. 0, or EDGED_E_INTERNAL. */
static int job_take_body(struct http_req *r, struct job *job, char *err)
{
    size_t reserved = 0;

    if (!(job->src_block = http_req_take_body(r, &reserved))) { /* src points into it: never here */
        job->src = NULL;
        return edged_fail(err, EDGED_E_INTERNAL, "the compressed image is not in the request's body");
    }
    job_take_budget(job, &reserved);
    return 0;
}

/* The format a job's device encode writes, as the answer names it. */
static int job_enc_is(const struct job *job, enum imageio_out fmt)
{
    enum job_enc e = fmt == IMAGEIO_OUT_JPEG ? JOB_ENC_JPEG : fmt == IMAGEIO_OUT_PNG ? JOB_ENC_PNG : JOB_ENC_NONE;

    return job->enc == e;
}

/* The output bytes: the device's encode when the worker made one, else the CPU encoder's. */
static int encode_output(const struct job *job, const struct imageio_enc *enc, uint8_t **out, size_t *len,
                         char *err)
{
    if (!job->out_enc || !job_enc_is(job, enc->fmt))
        return imageio_encode(&job->out, enc, out, len, err);
    if (!(*out = malloc(job->out_enc_len)))
        return edged_fail(err, EDGED_E_NOMEM, "out of memory");
    memcpy(*out, job->out_enc, job->out_enc_len);
    *len = job->out_enc_len;
    return 0;
}

/* ---- POST /v1/filter ---------------------------------------------------------------------- */

static void answer_json(struct http_req *r, struct service *s, const struct params *p, const struct job *job,
                        size_t png_len)
{
    struct result_filter res = {0};
    char dev[64];
    char *text;
    int gpu = variant_is_gpu(job->used);
    struct backend *view = device_view(s, p, job);
    double copy_gbps = gpu ? gconv_get_info(backend_gpu(view))->copy_gbps : 0.0;

    res.request_id = http_req_id(r);
    res.trace_id = http_req_trace_id(r);
    res.filter = result_filter_label(p);
    res.variant = variant_name(job->used);
    res.backend = gpu ? "gpu" : "cpu";
    res.device = job_device(view, job, dev, sizeof(dev));
    res.device_number = gpu ? backend_ordinal(view) : -1;
    res.width = job->out.w;
    res.height = job->out.h;
    res.channels = job->out.ch;
    res.t = *http_req_times(r);
    result_kernel_rates(&job->plan, job->out.w, job->out.h, job->t.kernel, &res.gflops, &res.effective_gbps);
    res.bandwidth_fraction = copy_gbps > 0.0 ? res.effective_gbps / copy_gbps : -1.0;
    res.block = gpu ? (job->block ? job->block : VARIANT_DEFAULT_BLOCK) : 0;
    res.output_bytes = png_len;
    res.output_format = answer_format(r, p);
    res.params = p;
    res.plan = &job->plan;
    if (!(text = result_filter_json(&res))) {
        http_respond_error(r, EDGED_E_NOMEM, "out of memory rendering the result");
        return;
    }
    http_respond(r, 200, "application/json", text, strlen(text), "X-Edged-Variant", res.variant);
}

/* Encodes the finished job (PNG, JPEG or WebP), its `encoding` bytes reserved meanwhile, and
 * answers; the image is encoded even for JSON, whose output.bytes and encode time then describe
 * what the image answer would have been. The encoded image stays reserved with the request until
 * it is sent (a slow reader holds it); the rest is given back. */
static void answer(struct http_req *r, struct service *s, const struct upload *u, const struct job *job,
                   size_t encoding)
{
    struct result_times *t = http_req_times(r);
    struct imageio_enc enc = output_encoding(r, &u->p);
    uint8_t *png = NULL;
    size_t png_len = 0, kept;
    char err[EDGED_ERR_LEN];
    double t0;
    int rc;

    if ((rc = budget_take(s->budget, encoding, SERVICE_BUDGET_WAIT_MS, err)) < 0) {
        http_respond_error(r, rc, err);
        return;
    }
    t->codec_wait += service_codec_enter(s, (long long)job->out.w * job->out.h);
    t0 = clock_ms();
    rc = encode_output(job, &enc, &png, &png_len, err);
    t->encode = clock_ms() - t0;
    service_codec_leave(s, (long long)job->out.w * job->out.h);
    kept = rc == 0 && !wants_json(r, &u->p) ? (png_len < encoding ? png_len : encoding) : 0;
    http_req_keep_budget(r, kept);
    budget_give(s->budget, encoding - kept);
    if (rc < 0) {
        http_respond_error(r, rc, err);
        return;
    }
    t->total = clock_ms() - http_req_start(r);
    metrics_stages(s->m, t);
    if (wants_json(r, &u->p)) {
        free(png);
        answer_json(r, s, &u->p, job, png_len);
        return;
    }
    http_respond(r, 200, imageio_out_mime(enc.fmt), png, png_len, "X-Edged-Variant", variant_name(job->used));
}

void endpoint_filter(struct http_req *r, void *app)
{
    struct service *s = app;
    struct upload u;
    struct job *job = NULL;
    struct imageio_head head;
    struct service_bytes b = {0};
    char err[EDGED_ERR_LEN];
    size_t decoding = 0; /* the decoder's part of the reservation, given back once decoded */
    size_t png_backlog = 0; /* PNG bytes this request counts in the device's backlog */
    int rc, dev;

    if ((rc = read_upload(r, PARAMS_FILTER, &u, err)) < 0 ||
        (rc = params_output_format(&u.p, accept_format(r), ACCEPT_KEEPS_PNG, err)) < 0 ||
        (rc = request_device(s, &u.p, &dev, err)) < 0)
        goto fail;
    http_req_note(r, result_filter_label(&u.p), variant_name(u.p.variant), NULL, 0, 0);
    if ((rc = image_reserve(s, &u, 0, &head, &b, err)) < 0 || (rc = check_output_size(r, &u.p, &head, err)) < 0)
        goto fail;
    decoding = b.decode;
    if (!(job = job_new())) {
        rc = edged_fail(err, EDGED_E_NOMEM, "out of memory");
        goto fail;
    }
    job_set_budget(job, s->budget, b.work, b.out);
    job_take_budget(job, &b.hold); /* a job abandoned at a 504 keeps it until it is freed */
    if ((rc = job_take_jpeg(s, &u.p, &head, u.image, u.image_len, job, http_req_times(r), err)) < 0 ||
        (rc == 0 &&
         (rc = job_take_png(s, &u.p, &head, u.image, u.image_len, job, http_req_times(r), err)) < 0) ||
        (rc == 0 &&
         (rc = decode_image(s, &u.p, &head, u.image, u.image_len, &job->in, http_req_times(r), err)) < 0))
        goto fail;
    if (job->src && (rc = job_take_body(r, job, err)) < 0)
        goto fail;
    if (job->src_format == JOB_SRC_PNG && job->src)
        pngjob_backlog_begin(png_backlog = job->src_len);
    budget_give(s->budget, decoding);
    decoding = 0;
    http_req_note(r, result_filter_label(&u.p), variant_name(u.p.variant), NULL, job->in.w, job->in.h);
    if (!job->src && (rc = job_prepare(s, &u.p, job, err)) < 0)
        goto fail;
    pxjob_pin(job); /* GPU lane: the decoded pixels wait in pinned memory, uploaded from there */
    job_encode_on_device(s, r, &u.p, job);
    http_req_note(r, result_filter_label(&u.p), variant_name(u.p.variant), job_backend(job), job->in.w,
                  job->in.h);
    rc = job_run(s, r, job, err);
    note_device(s, r, job);
    pngjob_backlog_end(png_backlog);
    png_backlog = 0;
    if (rc < 0)
        goto fail;
    stage_times(http_req_times(r), job);
    http_req_note(r, result_filter_label(&u.p), variant_name(job->used), job_backend(job), job->out.w,
                  job->out.h);
    answer(r, s, &u, job, b.encode);
    job_release(s->q, job);
    return;
fail:
    pngjob_backlog_end(png_backlog);
    http_respond_error(r, rc, err);
    job_release(s->q, job);
    budget_give(s->budget, decoding + b.hold); /* b.hold is 0 once the job took it */
}

/* ---- POST /v1/compare --------------------------------------------------------------------- */

struct compare {
    struct img ref;                       /* cpu_serial's output */
    struct result_compare_row rows[VARIANT_COUNT];
    char msgs[VARIANT_COUNT][EDGED_ERR_LEN];
    int nrows;
};

/* A geometry that differs counts as the largest difference a sample can have. */
static int max_abs_diff(const struct img *a, const struct img *b)
{
    int d = img_max_diff(a, b);

    return d < 0 ? 255 : d;
}

/* Runs variant v on a copy of in. A variant that cannot serve the case becomes a skipped row;
 * any other failure (queue full, deadline, GPU fatal) fails the whole request, and the job takes
 * the request's reservation *reserved: it may still be running (abandoned at a 504 or 499). */
static int compare_one(struct service *s, struct http_req *r, const struct params *p, const struct img *in,
                       enum variant v, struct compare *c, size_t *reserved, char *err)
{
    struct result_compare_row *row = &c->rows[c->nrows];
    struct params pv = *p;
    struct job *job = job_new();
    int rc;

    *row = (struct result_compare_row){.variant = variant_name(v)};
    pv.variant = v;
    if (!job || (rc = img_alloc(&job->in, in->w, in->h, in->ch, err)) < 0) {
        job_release(s->q, job);
        return edged_fail(err, EDGED_E_NOMEM, "out of memory");
    }
    memcpy(job->in.px, in->px, in->stride * (size_t)in->h);
    if ((rc = job_prepare(s, &pv, job, c->msgs[c->nrows])) == 0) {
        struct service_bytes b;
        service_image_bytes(s, &job->plan, v, in->w, in->h, in->ch, &b);
        job_set_budget(job, s->budget, b.work, b.out);
        job->plan.accept_packed = 0; /* max_abs_diff reads the maps byte for byte; nothing is encoded */
        rc = job_run(s, r, job, c->msgs[c->nrows]);
    }
    if (rc == EDGED_E_VARIANT_LIMIT || rc == EDGED_E_NO_CUDA || rc == EDGED_E_PARAM) {
        row->code = rc;
        row->message = c->msgs[c->nrows++];
        rc = 0;
    } else if (rc == 0) {
        row->kernel_ms = job->t.kernel;
        result_kernel_rates(&job->plan, in->w, in->h, job->t.kernel, &row->gflops, &row->effective_gbps);
        if (v == VARIANT_CPU_SERIAL) {
            c->ref = job->out; /* keep it: the reference for the other rows */
            job->out = (struct img){0};
        }
        row->max_abs_diff = v == VARIANT_CPU_SERIAL ? 0 : max_abs_diff(&c->ref, &job->out);
        c->nrows++;
    } else {
        edged_fail(err, rc, "%s: %s", variant_name(v), c->msgs[c->nrows]);
        job_take_budget(job, reserved);
    }
    job_release(s->q, job);
    return rc;
}

/* cpu_serial first (the reference), then the listed variants or every one this server has. */
static int compare_all(struct service *s, struct http_req *r, const struct params *p, const struct img *in,
                       struct compare *c, size_t *reserved, char *err)
{
    unsigned want = p->variants;
    int rc;

    if (!want)
        for (int v = VARIANT_CPU_SERIAL; v < VARIANT_COUNT; v++)
            if (!variant_is_gpu(v) || (backend_has_gpu(s->backend) && variant_built(v)))
                want |= 1u << v;
    want |= 1u << VARIANT_CPU_SERIAL;
    for (int v = VARIANT_CPU_SERIAL; v < VARIANT_COUNT; v++)
        if ((want & (1u << v)) && (rc = compare_one(s, r, p, in, (enum variant)v, c, reserved, err)) < 0)
            return rc;
    return 0;
}

void endpoint_compare(struct http_req *r, void *app)
{
    struct service *s = app;
    struct upload u;
    struct img in = {0};
    struct compare *c = calloc(1, sizeof(*c));
    struct result_compare res = {0};
    struct imageio_head head;
    struct service_bytes b = {0};
    char err[EDGED_ERR_LEN], name[64];
    char *text;
    int rc, dev;

    if (!c)
        rc = edged_fail(err, EDGED_E_NOMEM, "out of memory");
    else if ((rc = read_upload(r, PARAMS_COMPARE, &u, err)) == 0 && (rc = request_device(s, &u.p, &dev, err)) == 0 &&
             (rc = image_reserve(s, &u, 1, &head, &b, err)) == 0) {
        rc = decode_image(s, &u.p, &head, u.image, u.image_len, &in, http_req_times(r), err);
        budget_give(s->budget, b.decode);
        if (rc == 0) /* a row's job that fails takes over b.hold: it may still be running */
            rc = compare_all(s, r, &u.p, &in, c, &b.hold, err);
    }
    if (rc < 0) {
        http_respond_error(r, rc, err);
        goto out;
    }
    http_req_note(r, result_filter_label(&u.p), "compare", "all", in.w, in.h);
    snprintf(name, sizeof(name), "%s", backend_device(device_view(s, &u.p, NULL)));
    res = (struct result_compare){http_req_id(r), http_req_trace_id(r), result_filter_label(&u.p),
                                  service_backend(s), name, in.w, in.h, c->ref.ch, c->rows, c->nrows};
    if (!(text = result_compare_json(&res)))
        http_respond_error(r, EDGED_E_NOMEM, "out of memory rendering the result");
    else
        http_respond(r, 200, "application/json", text, strlen(text), NULL, NULL);
out:
    if (c)
        img_free(&c->ref);
    free(c);
    img_free(&in);
    budget_give(s->budget, b.hold);
}
