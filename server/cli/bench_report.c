/* bench_report.c — `edged bench` output: derived figures of a row and its table, CSV or JSON form. */
#include "cli/bench_report.h"

#include <math.h>
#include <stdio.h>
#include <time.h>

struct row_stats {
    double gpix, gflop, gbps, pct_copy, pct_fp32, x_serial, x_cpu, floor_ms, x_floor;
};

static struct row_stats row_stats(const struct bench_report *rp, const struct bench_row *r)
{
    struct row_stats s = {NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN};
    double px = (double)r->w * r->h * r->planes;

    if (rp->gi)
        s.floor_ms = r->bytes_px * px / (rp->gi->copy_gbps * 1e6);
    if (r->ms <= 0.0)
        return s;
    s.gpix = px / (r->ms * 1e6);
    if (r->flops_px > 0.0)
        s.gflop = r->flops_px * px / (r->ms * 1e6);
    s.gbps = r->bytes_px * px / (r->ms * 1e6);
    if (rp->gi) {
        s.pct_copy = 100.0 * s.gbps / rp->gi->copy_gbps;
        if (r->flops_px > 0.0)
            s.pct_fp32 = 100.0 * s.gflop / rp->gi->fp32_gflops;
        s.x_floor = r->ms / s.floor_ms;
    }
    if (rp->serial_ms > 0.0)
        s.x_serial = rp->serial_ms / r->ms;
    if (rp->cpu_ms > 0.0)
        s.x_cpu = rp->cpu_ms / r->ms;
    return s;
}

/* A number for a table or CSV cell, or "-" / empty when not measured. */
static const char *cell(char *buf, size_t n, double v, const char *fmt, const char *none)
{
    if (isnan(v))
        return none;
    snprintf(buf, n, fmt, v);
    return buf;
}

static const char *today(char *buf, size_t n)
{
    time_t t = time(NULL);
    struct tm tm;

    strftime(buf, n, "%Y-%m-%d", gmtime_r(&t, &tm));
    return buf;
}

void bench_report_begin(const struct bench_report *o)
{
    const struct gconv_info *gi = o->gi;
    char date[16], num[16] = "null";

    today(date, sizeof(date));
    if (gi)
        snprintf(num, sizeof(num), "%d", o->device);
    if (o->fmt == BENCH_CSV) {
        printf("date,device,variant,block,width,height,ksize,taps,channels,border,ms,gpix_s,gflop_s,gb_s,"
               "pct_copy_bw,pct_fp32_peak,speedup_vs_cpu_serial,speedup_vs_cpu,copy_gbps,fp32_gflops,floor_ms,"
               "x_floor,device_number,note\n");
        return;
    }
    if (o->fmt == BENCH_JSON) {
        printf("{\"date\": \"%s\", \"device\": {\"number\": %s, \"name\": \"%s\", \"cc\": \"%d.%d\", "
               "\"sms\": %d, \"l2_bytes\": %zu, "
               "\"copy_gbps\": %.1f, \"fp32_gflops\": %.1f},\n \"filter\": \"%s\", \"border\": \"%s\", "
               "\"reps\": %d, "
               "\"warmup\": %d, \"channels\": %d,\n \"rows\": [",
               date, num, gi ? gi->name : "none", gi ? gi->cc_major : 0, gi ? gi->cc_minor : 0, gi ? gi->sms : 0,
               gi ? gi->l2_bytes : 0, gi ? gi->copy_gbps : 0.0, gi ? gi->fp32_gflops : 0.0,
               o->filter, o->border, o->reps, o->warmup, o->channels);
        return;
    }
    if (gi)
        printf(
            "# %s: device %d, %s (cc %d.%d, %d SMs, L2 %zu MiB), measured copy %.0f GB/s (read+write), FP32 "
            "peak %.1f TFLOP/s\n",
            date, o->device, gi->name, gi->cc_major, gi->cc_minor, gi->sms, gi->l2_bytes >> 20, gi->copy_gbps,
            gi->fp32_gflops / 1e3);
    if (o->u8_edge == 2)
        printf("# u8 pipeline (--ops) and its steps alone, the borders its steps give, median of %d after %d "
               "warm-up; GB/s and floor count in_ch + out_ch bytes per pixel\n",
               o->reps, o->warmup);
    else if (o->u8_edge)
        printf("# u8 edge pipeline (gaussian5 -> laplacian3 -> |L| > 5, %s border; NPP: replicate, no "
               "threshold), median of %d after %d warm-up; GB/s and floor count in_ch + out_ch bytes per pixel\n",
               o->border, o->reps, o->warmup);
    else
        printf("# filter %s, border %s, %d channel(s), median of %d after %d warm-up; GFLOP/s = 2*k*k per "
               "pixel, GB/s = 8 B per pixel\n",
               o->filter, o->border, o->channels, o->reps, o->warmup);
    printf("%-16s %5s %11s %4s %10s %8s %9s %8s %6s %6s %8s %7s %8s %7s  %s\n", "variant", "block", "size", "k",
           "ms", "GPix/s", "GFLOP/s", "GB/s", "%copy", "%fp32", "x_serial", "x_cpu", "floor", "x_floor", "note");
}

static void print_row_text(const struct bench_row *r, const struct row_stats *s)
{
    char b[10][32], size[24], blk[8];

    snprintf(size, sizeof(size), "%dx%d", r->w, r->h);
    snprintf(blk, sizeof(blk), "%d", r->block);
    printf("%-16s %5s %11s %4d %10s %8s %9s %8s %6s %6s %8s %7s %8s %7s  %s\n", r->impl, r->block ? blk : "-",
           size, r->k, cell(b[0], 32, r->ms > 0 ? r->ms : NAN, "%.4f", "-"), cell(b[1], 32, s->gpix, "%.2f", "-"),
           cell(b[2], 32, s->gflop, "%.0f", "-"), cell(b[3], 32, s->gbps, "%.0f", "-"),
           cell(b[4], 32, s->pct_copy, "%.1f", "-"), cell(b[5], 32, s->pct_fp32, "%.1f", "-"),
           cell(b[6], 32, s->x_serial, "%.0f", "-"), cell(b[7], 32, s->x_cpu, "%.1f", "-"),
           cell(b[8], 32, s->floor_ms, "%.4f", "-"), cell(b[9], 32, s->x_floor, "%.2f", "-"), r->note);
}

/* CSV and JSON cells never contain quotes or commas from us; notes are sanitised. */
static void sanitize(char *s)
{
    for (; *s; s++)
        if (*s == '"' || *s == ',' || *s == '\\' || *s == '\n')
            *s = ';';
}

static void print_row_csv(const struct bench_report *rp, struct bench_row *r, const struct row_stats *s)
{
    char b[11][32], date[16];
    const struct gconv_info *gi = rp->gi;

    sanitize(r->note);
    printf("%s,%s,%s,%d,%d,%d,%d,%d,%d,%s,%s,%s,%s,%s,%s,%s,%s,%s,%.1f,%.1f,%s,%s,%s,%s\n", today(date, sizeof(date)),
           gi ? gi->name : "none", r->impl, r->block, r->w, r->h, r->k, r->k * r->k, r->ch, r->border,
           cell(b[0], 32, r->ms > 0 ? r->ms : NAN, "%.5f", ""), cell(b[1], 32, s->gpix, "%.4f", ""),
           cell(b[2], 32, s->gflop, "%.2f", ""), cell(b[3], 32, s->gbps, "%.2f", ""),
           cell(b[4], 32, s->pct_copy, "%.2f", ""), cell(b[5], 32, s->pct_fp32, "%.2f", ""),
           cell(b[6], 32, s->x_serial, "%.2f", ""), cell(b[7], 32, s->x_cpu, "%.3f", ""),
           gi ? gi->copy_gbps : 0.0, gi ? gi->fp32_gflops : 0.0, cell(b[8], 32, s->floor_ms, "%.5f", ""),
           cell(b[9], 32, s->x_floor, "%.3f", ""), cell(b[10], 32, gi ? rp->device : NAN, "%.0f", ""), r->note);
}

static void print_row_json(const struct bench_report *rp, struct bench_row *r, const struct row_stats *s)
{
    char b[10][32];

    sanitize(r->note);
    printf(
        "%s\n  {\"variant\": \"%s\", \"block\": %d, \"width\": %d, \"height\": %d, \"ksize\": %d, "
        "\"channels\": %d, "
        "\"border\": \"%s\", \"ms\": %s, \"gpix_s\": %s, \"gflop_s\": %s, \"gb_s\": %s, \"pct_copy_bw\": %s, "
        "\"pct_fp32_peak\": %s, \"speedup_vs_cpu_serial\": %s, \"speedup_vs_cpu\": %s, \"floor_ms\": %s, "
        "\"x_floor\": %s, \"note\": \"%s\"}",
        rp->rows ? "," : "", r->impl, r->block, r->w, r->h, r->k, r->ch, r->border,
        cell(b[0], 32, r->ms > 0 ? r->ms : NAN, "%.5f", "null"), cell(b[1], 32, s->gpix, "%.4f", "null"),
        cell(b[2], 32, s->gflop, "%.2f", "null"), cell(b[3], 32, s->gbps, "%.2f", "null"),
        cell(b[4], 32, s->pct_copy, "%.2f", "null"), cell(b[5], 32, s->pct_fp32, "%.2f", "null"),
        cell(b[6], 32, s->x_serial, "%.2f", "null"), cell(b[7], 32, s->x_cpu, "%.3f", "null"),
        cell(b[8], 32, s->floor_ms, "%.5f", "null"), cell(b[9], 32, s->x_floor, "%.3f", "null"), r->note);
}

void bench_report_row(struct bench_report *rp, struct bench_row *r)
{
    struct row_stats s = row_stats(rp, r);

    if (rp->fmt == BENCH_CSV)
        print_row_csv(rp, r, &s);
    else if (rp->fmt == BENCH_JSON)
        print_row_json(rp, r, &s);
    else
        print_row_text(r, &s);
    rp->rows++;
    fflush(stdout);
}

void bench_report_end(const struct bench_report *r)
{
    if (r->fmt == BENCH_JSON)
        printf("\n]}\n");
}
