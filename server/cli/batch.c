/* batch.c — the image pipeline of `edged filter`: codec threads take the images in order, read,
 * decode and queue each (the service's queue and workers run it: GPU streams or the CPU pool,
 * through backend.c), then wait for it, encode it and write it; progress and JSON lines beside. */
#include "cli/batch.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "jobs/backend.h"
#include "clock.h"
#include "cli/commands.h"
#include "errors.h"
#include "ops/file_io.h"
#include "cli/progress.h"
#include "codec/image_io.h"
#include "jobs/queue.h"
#include "result.h"
#include "jobs/worker.h"

/* Largest input read; the decode limits apply on top. */
#define BATCH_MAX_FILE_BYTES ((size_t)1 << 30)
/* GPU streams, as the service's default: a job per stream in flight hides the copies. */
#define BATCH_STREAMS 4
/* The queue holds each job at most until its codec thread waits for it: no deadline. */
#define BATCH_NO_DEADLINE_MS INT_MAX
/* How long the end of the run waits for a GPU worker stuck in the driver before leaving it. */
#define BATCH_WORKER_WAIT_MS 5000
/* Progress redraws a terminal line at most this often, or prints a line when not a terminal. */
#define PROGRESS_TTY_MS 100.0
#define PROGRESS_LINE_MS 1000.0

struct batch {
    const struct batch_item *items;
    int n;
    const struct batch_config *c;
    pthread_mutex_t mu; /* the fields below up to open_mu, and lines on stdout and stderr */
    int next;           /* the next image to start */
    int done, failed;   /* images finished (written or failed), and failed */
    int skipped;        /* images taken but not run: the backend failed to open */
    int stopped;        /* the backend failed: start no more images */
    int status;         /* the worst exit status so far */
    int show;
    struct progress line;
    double t0, shown;
    mode_t umask;
    pthread_mutex_t open_mu; /* the backend, opened once by the first decoded image */
    int opened, open_rc;
    char open_err[EDGED_ERR_LEN];
    struct backend *b;
    struct queue *q;
    struct worker *w;
};

/* One image between its decode and its write, on one codec thread. */
struct image {
    int idx;
    struct job *job;
    int w, h, ch; /* of the input: the GPU worker frees the input once it is on the device */
    double t0, decode;
};

/* ---- files ------------------------------------------------------------------------------- */

/* Standard output, or the file at path opened as it is (a device, a FIFO, a link's target). */
static int write_in_place(const char *path, const uint8_t *data, size_t len, char *err)
{
    int to_stdout = strcmp(path, "-") == 0;
    FILE *f = to_stdout ? stdout : fopen(path, "wb");
    size_t n;

    if (!f)
        return edged_fail(err, EDGED_E_INTERNAL, "cannot create %s: %s", path, strerror(errno));
    n = fwrite(data, 1, len, f);
    if ((to_stdout ? fflush(f) : fclose(f)) != 0 || n != len)
        return edged_fail(err, EDGED_E_INTERNAL, "cannot write %s: %s", to_stdout ? "standard output" : path,
                          strerror(errno));
    return 0;
}

static int write_full(int fd, const uint8_t *data, size_t len)
{
    while (len > 0) {
        ssize_t k = write(fd, data, len);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        data += k;
        len -= (size_t)k;
    }
    return 0;
}

/* A temporary file beside path (".NAME.edged-XXXXXX" in its directory) with the given mode,
 * renamed over path once complete: readers see the old file or the whole new one. */
static int write_replace(const char *path, const uint8_t *data, size_t len, mode_t mode, char *err)
{
    const char *slash = strrchr(path, '/');
    char tmp[PATH_MAX];
    int fd, ok, e;

    if (snprintf(tmp, sizeof(tmp), "%.*s.%s.edged-XXXXXX", slash ? (int)(slash - path + 1) : 0, path,
                 slash ? slash + 1 : path) >= (int)sizeof(tmp))
        return edged_fail(err, EDGED_E_INTERNAL, "cannot create %s: name too long", path);
    if ((fd = mkstemp(tmp)) < 0)
        return edged_fail(err, EDGED_E_INTERNAL, "cannot create %s: %s", path, strerror(errno));
    ok = fchmod(fd, mode) == 0 && write_full(fd, data, len) == 0;
    e = errno;
    if (close(fd) != 0 && ok) {
        ok = 0;
        e = errno;
    }
    if (ok && rename(tmp, path) != 0) {
        ok = 0;
        e = errno;
    }
    if (ok)
        return 0;
    unlink(tmp);
    return edged_fail(err, EDGED_E_INTERNAL, "cannot write %s: %s", path, strerror(e));
}

/* The output, whole or not at all: a new or regular file is replaced (keeping an existing file's
 * mode; a new one gets 0666 less the umask); standard output and paths that exist as something
 * else (a device, a FIFO, a symbolic link) are written in place. */
static int write_output(const char *path, const uint8_t *data, size_t len, mode_t umask_bits, char *err)
{
    struct stat st;
    int exists = strcmp(path, "-") != 0 && lstat(path, &st) == 0;

    if (strcmp(path, "-") == 0 || (exists && !S_ISREG(st.st_mode)))
        return write_in_place(path, data, len, err);
    return write_replace(path, data, len, exists ? st.st_mode & 07777 : 0666 & ~umask_bits, err);
}

/* ---- reports (under bt->mu) --------------------------------------------------------------- */

/* The exit status that says more: 1 (a failure) over 2 (usage) over 3 (bad input) over 0. */
static int worse(int a, int b)
{
    static const int rank[] = {[EXIT_OK] = 0, [EXIT_BAD_INPUT] = 1, [EXIT_USAGE] = 2, [EXIT_FAIL] = 3};

    return rank[b] > rank[a] ? b : a;
}

static void eta_text(double s, char *buf, size_t cap)
{
    if (s < 60)
        snprintf(buf, cap, "%.0f s", s);
    else
        snprintf(buf, cap, "%d:%02d min", (int)(s / 60), (int)s % 60);
}

/* "N/M images, X img/s, ETA T": one line rewritten in place on a terminal, else a line at most
 * every PROGRESS_LINE_MS; the last ("..., in T s") always. Never on stdout. */
static void progress_locked(struct batch *bt, int last)
{
    double now = clock_ms(), secs = (now - bt->t0) / 1e3, rate = secs > 0 ? bt->done / secs : 0;
    char eta[32], failed[32] = "";

    if (!bt->show || (!last && now - bt->shown < (bt->line.tty ? PROGRESS_TTY_MS : PROGRESS_LINE_MS)))
        return;
    bt->shown = now;
    if (last) {
        if (bt->failed)
            snprintf(failed, sizeof(failed), ", %d failed", bt->failed);
        progress_show(&bt->line, 1, "%d/%d images, %.1f img/s%s, in %.1f s", bt->done, bt->n, rate, failed, secs);
    } else {
        eta_text(rate > 0 ? (bt->n - bt->done) / rate : 0, eta, sizeof(eta));
        progress_show(&bt->line, 0, "%d/%d images, %.1f img/s, ETA %s", bt->done, bt->n, rate, eta);
    }
}

/* A failure: "edged filter: [INPUT: ]code: message" on stderr; the worst status so far. */
static void report_locked(struct batch *bt, int idx, int rc, const char *err)
{
    progress_end(&bt->line);
    if (idx >= 0 && bt->c->several)
        fprintf(stderr, "edged filter: %s: %s: %s\n", bt->items[idx].in, edged_err_name(rc), err);
    else
        fprintf(stderr, "edged filter: %s: %s\n", edged_err_name(rc), err);
    bt->status = worse(bt->status, exit_status_for(rc));
}

/* An image is finished: rc 0 (written) or its failure. A lost GPU stops the run. */
static void image_done(struct batch *bt, int idx, int rc, const char *err)
{
    pthread_mutex_lock(&bt->mu);
    if (rc < 0) {
        report_locked(bt, idx, rc, err);
        bt->failed++;
    }
    if (rc == EDGED_E_GPU_FATAL)
        bt->stopped = 1;
    bt->done++;
    progress_locked(bt, 0);
    pthread_mutex_unlock(&bt->mu);
}

/* The image's JSON line on stdout: the per-image object of one image, with input and output. */
static void print_json(struct batch *bt, const struct image *im, const struct result_times *rt, double filter_ms,
                       size_t out_bytes)
{
    const struct job *job = im->job;
    cJSON *root = cJSON_CreateObject(), *ms = cJSON_CreateObject();
    char *text;

    cJSON_AddStringToObject(root, "input", bt->items[im->idx].in);
    cJSON_AddStringToObject(root, "output", bt->items[im->idx].out);
    cJSON_AddStringToObject(root, "filter", result_filter_label(bt->c->p));
    cJSON_AddStringToObject(root, "variant", variant_name(job->used));
    cJSON_AddStringToObject(root, "backend", variant_is_gpu(job->used) ? "gpu" : "cpu");
    cJSON_AddStringToObject(root, "device", backend_device(bt->b));
    if (variant_is_gpu(job->used)) /* as the service's results: the CUDA device number, or null */
        cJSON_AddNumberToObject(root, "device_number", backend_ordinal(bt->b));
    else
        cJSON_AddNullToObject(root, "device_number");
    cJSON_AddNumberToObject(root, "width", im->w);
    cJSON_AddNumberToObject(root, "height", im->h);
    cJSON_AddNumberToObject(root, "channels", im->ch);
    cJSON_AddNumberToObject(root, "out_channels", job->out.ch);
    cJSON_AddNumberToObject(root, "output_bytes", (double)out_bytes);
    /* the service's stages through the service's writer, plus the whole filter step */
    result_times_json(ms, rt, RESULT_TIMES_API);
    cJSON_AddNumberToObject(ms, "filter", result_round_ms(filter_ms));
    cJSON_AddItemToObject(root, "timings_ms", ms);
    if ((text = cJSON_PrintUnformatted(root))) {
        pthread_mutex_lock(&bt->mu);
        puts(text);
        fflush(stdout);
        pthread_mutex_unlock(&bt->mu);
        cJSON_free(text);
    }
    cJSON_Delete(root);
}

/* ---- the backend, opened by the first image that needs it ----------------------------------- */

/* The backend the variant needs (auto may take either, a GPU variant or a named --device needs the
 * GPU) on the CUDA device --device names (default 0), the queue and the workers that run the jobs,
 * as the service starts them. */
static int open_backend(struct batch *bt, char *err)
{
    const struct params *p = bt->c->p;
    enum variant v = p->variant;
    int named = (p->given & PARAMS_F_DEVICE) != 0, device = named ? p->device : 0;
    enum backend_kind want = v == VARIANT_AUTO && !named ? BACKEND_AUTO
                             : variant_is_gpu(v) || named ? BACKEND_GPU
                                                          : BACKEND_CPU;
    struct worker_config wc;
    int rc;

    if ((rc = backend_open(&bt->b, want, &device, 1, bt->n < BATCH_STREAMS ? bt->n : BATCH_STREAMS, 0, err)) < 0 ||
        (rc = queue_new(&bt->q, bt->c->threads * BATCH_AHEAD, BATCH_NO_DEADLINE_MS, 0, err)) < 0)
        return rc;
    /* cpu spreads each job over the cores; cpu_serial runs one job per core */
    wc = v == VARIANT_CPU_SERIAL ? (struct worker_config){bt->c->threads, 1, 0}
                                 : (struct worker_config){1, backend_threads(bt->b), 0};
    return worker_start(&bt->w, bt->q, bt->b, &wc, err);
}

/* Opens the backend on the first call (batch_run's, or one image's after its decode); a failure
 * is reported once and stops the run. */
static int backend_ready(struct batch *bt)
{
    int rc;

    pthread_mutex_lock(&bt->open_mu);
    if (!bt->opened) {
        bt->opened = 1;
        if ((bt->open_rc = open_backend(bt, bt->open_err)) < 0) {
            pthread_mutex_lock(&bt->mu);
            report_locked(bt, -1, bt->open_rc, bt->open_err);
            bt->stopped = 1;
            pthread_mutex_unlock(&bt->mu);
        }
    }
    rc = bt->open_rc;
    pthread_mutex_unlock(&bt->open_mu);
    return rc;
}

/* After the workers. A GPU worker stuck in the driver still uses the queue and the backend, and
 * closing a context after a fatal GPU error could block in the driver (as cmd_serve.c says), so
 * both are then left to the process exit. */
static void close_backend(struct batch *bt)
{
    if (bt->w) {
        int fatal = worker_fatal(bt->w, NULL);
        queue_close(bt->q);
        if (worker_stop(bt->w, BATCH_WORKER_WAIT_MS) < 0 || fatal)
            return;
    }
    queue_free(bt->q);
    backend_close(bt->b);
}

/* ---- one image ----------------------------------------------------------------------------- */

/* Decodes the input into job and sets the plan, variant and block of the request. */
static int job_from_input(const struct params *p, const uint8_t *file, size_t len, struct job *job, char *err)
{
    struct png_limits lim;
    int rc;

    pngio_default_limits(&lim);
    if ((rc = imageio_load(file, len, &lim, p->orientation == PARAMS_ORIENT_EXIF, &job->in, err)) < 0)
        return rc;
    job->variant = p->variant;
    job->block = p->block;
    return params_plan(p, job->in.ch, &job->plan, err);
}

/* read -> decode -> job routed and queued. Returns 0 when queued; else the image is finished
 * (reported, or skipped when the backend failed). */
static int image_start(struct batch *bt, int idx, struct image *im)
{
    uint8_t *file = NULL;
    size_t len = 0;
    char err[EDGED_ERR_LEN] = "";
    double t1;
    int rc;

    *im = (struct image){.idx = idx, .t0 = clock_ms()};
    if ((rc = fileio_read(bt->items[idx].in, BATCH_MAX_FILE_BYTES, &file, &len, err)) < 0)
        goto out;
    if (!(im->job = job_new())) {
        rc = edged_fail(err, EDGED_E_NOMEM, "cannot allocate the job");
        goto out;
    }
    t1 = clock_ms();
    rc = job_from_input(bt->c->p, file, len, im->job, err);
    free(file);
    file = NULL;
    if (rc < 0)
        goto out;
    im->decode = clock_ms() - t1;
    im->w = im->job->in.w;
    im->h = im->job->in.h;
    im->ch = im->job->in.ch;
    if ((rc = backend_ready(bt)) < 0) {
        pthread_mutex_lock(&bt->mu);
        bt->skipped++;
        pthread_mutex_unlock(&bt->mu);
        job_release(NULL, im->job);
        return rc;
    }
    if ((rc = backend_route(bt->b, im->job, err)) == 0)
        rc = queue_push(bt->q, im->job, err);
out:
    free(file);
    if (rc < 0) {
        job_release(NULL, im->job);
        image_done(bt, idx, rc, err);
    }
    return rc;
}

/* wait for the job -> encode -> write (-> JSON line); finishes the image either way. */
static void image_finish(struct batch *bt, struct image *im)
{
    const struct params *p = bt->c->p;
    const struct imageio_enc enc = imageio_enc_of(p, bt->items[im->idx].format);
    struct job *job = im->job;
    struct result_times rt = {.decode = im->decode};
    uint8_t *encoded = NULL; /* PNG, JPEG or WebP */
    size_t encoded_len = 0;
    char err[EDGED_ERR_LEN] = "";
    double t1;
    int rc;

    if ((rc = queue_wait(bt->q, job, err)) < 0)
        goto out;
    t1 = clock_ms();
    if ((rc = imageio_encode(&job->out, &enc, &encoded, &encoded_len, err)) < 0 ||
        (rc = write_output(bt->items[im->idx].out, encoded, encoded_len, bt->umask, err)) < 0)
        goto out;
    rt.encode = clock_ms() - t1;
    rt.total = clock_ms() - im->t0;
    rt.queue = job->t.queue;
    rt.upload = job->t.upload;
    rt.kernel = job->t.kernel;
    rt.download = job->t.download;
    if (bt->c->json)
        print_json(bt, im, &rt, rt.queue + rt.upload + rt.kernel + rt.download, encoded_len);
out:
    free(encoded);
    job_release(bt->q, job); /* after a lost GPU a job still running stays the worker's */
    im->job = NULL;
    image_done(bt, im->idx, rc, err);
}

/* ---- codec threads --------------------------------------------------------------------------- */

static int take_next(struct batch *bt)
{
    int idx = -1;

    pthread_mutex_lock(&bt->mu);
    if (!bt->stopped && bt->next < bt->n)
        idx = bt->next++;
    pthread_mutex_unlock(&bt->mu);
    return idx;
}

/* Keeps up to BATCH_AHEAD images in flight: the next one decodes while the backend runs the one
 * before, which is then encoded and written. */
static void *codec_main(void *arg)
{
    struct batch *bt = arg;
    struct image ring[BATCH_AHEAD];
    int head = 0, count = 0, idx;

    for (;;) {
        if (count < BATCH_AHEAD && (idx = take_next(bt)) >= 0) {
            if (image_start(bt, idx, &ring[(head + count) % BATCH_AHEAD]) == 0)
                count++;
            continue;
        }
        if (count == 0)
            return NULL;
        image_finish(bt, &ring[head]);
        head = (head + 1) % BATCH_AHEAD;
        count--;
    }
}

/* ---- the run ----------------------------------------------------------------------------------- */

static int thread_count(const struct batch_config *c, int n)
{
    long t = c->threads > 0 ? c->threads : sysconf(_SC_NPROCESSORS_ONLN);

    return t < 1 ? 1 : t > n ? n : (int)t;
}

/* Runs codec_main on cfg.threads threads, this one included (fewer if the system refuses some). */
static void run_codecs(struct batch *bt)
{
    pthread_t *th = calloc((size_t)bt->c->threads, sizeof(*th));
    int nth = 0;

    while (th && nth + 1 < bt->c->threads && pthread_create(&th[nth], NULL, codec_main, bt) == 0)
        nth++;
    codec_main(bt);
    for (int i = 0; i < nth; i++)
        pthread_join(th[i], NULL);
    free(th);
}

int batch_run(const struct batch_item *items, int n, const struct batch_config *c)
{
    struct batch_config cfg = *c;
    struct batch bt = {.items = items, .n = n, .c = &cfg};
    int left;

    cfg.threads = thread_count(c, n);
    pthread_mutex_init(&bt.mu, NULL);
    pthread_mutex_init(&bt.open_mu, NULL);
    bt.umask = umask(0); /* read before any thread starts: umask has no getter */
    umask(bt.umask);
    progress_init(&bt.line);
    bt.show = c->progress || (bt.line.tty && n > 1);
    bt.t0 = bt.shown = clock_ms();
    if (!c->several || backend_ready(&bt) == 0)
        run_codecs(&bt);
    close_backend(&bt);
    /* the threads have ended: the _locked helpers need no lock now */
    if ((left = bt.n - bt.next + bt.skipped) > 0 && c->several) {
        progress_end(&bt.line);
        fprintf(stderr, "edged filter: stopped: %d of %d images not processed\n", left, n);
    }
    progress_locked(&bt, 1);
    pthread_mutex_destroy(&bt.open_mu);
    pthread_mutex_destroy(&bt.mu);
    return bt.status;
}
