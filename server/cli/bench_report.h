/* bench_report.h — the output of `edged bench`: one row per measured implementation as a table,
 * CSV or JSON, with throughput, roofline fractions and speedups derived from the row. */
#ifndef EDGED_BENCH_REPORT_H
#define EDGED_BENCH_REPORT_H

#include "errors.h"
#include "gconv.h"

enum bench_fmt { BENCH_TABLE, BENCH_CSV, BENCH_JSON };

/* One measured implementation at one (size, kernel): what a printed row holds. ch (the channels
 * column), planes, bytes_px and flops_px are the traffic model of the row: fp32 rows run `planes`
 * = ch planes, each moving 8 bytes per pixel and doing 2*k*k flops; u8 edge rows run one pass over
 * an image of ch channels, moving ch + 1 bytes per pixel (ch + 1/8 with a 1-bit map), with no flop
 * count (flops_px 0: the GFLOP/s and % FP32 cells stay empty): the fused kernel does its gray sums
 * in integers and shares partial sums, so 2*(25+9) nominal flops per pixel would report more than
 * the FP32 peak. */
struct bench_row {
    const char *impl;
    int block; /* 0: not a GPU block size */
    int w, h, k;
    double ms; /* < 0: not measured, see note */
    const char *border;
    char note[EDGED_ERR_LEN];
    int ch, planes;
    double bytes_px, flops_px;
};

/* What the report states once (header) and the reference times the speedup columns divide. */
struct bench_report {
    enum bench_fmt fmt;
    const struct gconv_info *gi; /* NULL without a GPU: no roofline columns */
    int device;                  /* the CUDA device number gi describes; -1 without a GPU */
    const char *filter, *border;
    int reps, warmup, channels, u8_edge; /* u8_edge: 1 --u8-edge rows, 2 --ops rows */
    double serial_ms, cpu_ms; /* of the current (size, kernel); < 0 when not timed */
    int rows;                 /* printed so far */
};

/* Prints the header (table comments and column names, the CSV header line, or the JSON object's
 * opening up to its "rows" array) to stdout. */
void bench_report_begin(const struct bench_report *r);
/* Prints one row (its note is sanitised for CSV and JSON) and flushes stdout. */
void bench_report_row(struct bench_report *r, struct bench_row *row);
/* Closes the JSON document; nothing for the other formats. */
void bench_report_end(const struct bench_report *r);

#endif
