/* test_canny.c — canny_cpu against canny_serial bit for bit, Canny's tie rules on small cases, its
 * knobs and plan. The comparison with OpenCV itself is tests/system/test_canny.py. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "canny.h"
#include "check.h"
#include "errors.h"
#include "filter.h"
#include "image.h"
#include "params.h"
#include "pixel.h"
#include "variant.h"

enum pattern { PAT_NOISE, PAT_BLOCKS, PAT_RAMP, PAT_COUNT };

/* Noise (many weak edges), blocks of a few levels (plateaus: magnitude ties), a ramp with steps. */
static void fill(struct img *g, enum pattern pat)
{
    int cell = 1 + (int)(check_rng() % 6), levels[4];

    for (int i = 0; i < 4; i++)
        levels[i] = (int)(check_rng() % 256);
    for (int y = 0; y < g->h; y++)
        for (int x = 0; x < g->w; x++) {
            uint8_t *p = g->px + (size_t)y * g->stride + x;
            if (pat == PAT_NOISE)
                *p = (uint8_t)check_rng();
            else if (pat == PAT_BLOCKS)
                *p = (uint8_t)levels[((x / cell) * 7 + (y / cell) * 3) % 4];
            else
                *p = (uint8_t)((x * 3 + y * 5) / cell * 17 % 256);
        }
}

static int same(const struct img *a, const struct img *b, int *x0, int *y0)
{
    for (int y = 0; y < a->h; y++)
        for (int x = 0; x < a->w; x++)
            if (a->px[(size_t)y * a->stride + x] != b->px[(size_t)y * b->stride + x]) {
                *x0 = x;
                *y0 = y;
                return 0;
            }
    return 1;
}

/* Every aperture and norm, thresholds from 0 to past the largest magnitudes (low == high too),
 * sizes from 1x1 to tall and thin, thread counts 1..8: the threaded map equals the reference. */
static void test_threaded_equals_serial(void)
{
    static const int sizes[][2] = {{1, 1}, {1, 9}, {9, 1}, {2, 2}, {3, 5}, {5, 3}, {17, 13}, {64, 64},
                                   {3, 301}, {301, 3}, {7, 700}, {131, 257}, {257, 131}, {1000, 9}};
    char err[EDGED_ERR_LEN];
    int cases = 0, diffs = 0;

    for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++)
        for (int pat = 0; pat < PAT_COUNT; pat++)
            for (int ap = 3; ap <= 7; ap += 2)
                for (int l2 = 0; l2 <= 1; l2++) {
                    struct img g = {0}, ref = {0}, got = {0};
                    float scale = l2 ? 1.0f : 2.0f, lo = check_rng_float(0, 300) * scale;
                    struct canny_params p = {lo, check_rng() % 5 == 0 ? lo : lo + check_rng_float(0, 500) * scale, ap,
                                             l2};
                    int w = sizes[si][0], h = sizes[si][1], x = 0, y = 0;

                    if (img_alloc(&g, w, h, 1, err) < 0 || img_alloc(&ref, w, h, 1, err) < 0 ||
                        img_alloc(&got, w, h, 1, err) < 0) {
                        CHECK(0, "alloc: %s", err);
                        return;
                    }
                    fill(&g, (enum pattern)pat);
                    CHECK(canny_serial(&g, &p, &ref, err) == 0, "canny_serial: %s", err);
                    for (int t = 1; t <= 8; t++) {
                        memset(got.px, 7, (size_t)w * h);
                        CHECK(canny_cpu(&g, &p, t, &got, err) == 0, "canny_cpu: %s", err);
                        cases++;
                        if (!same(&ref, &got, &x, &y)) {
                            diffs++;
                            CHECK(0, "%dx%d pattern %d aperture %d l2 %d low %g high %g threads %d: first diff at "
                                     "(%d,%d)", w, h, pat, ap, l2, p.low, p.high, t, x, y);
                        }
                    }
                    img_free(&g);
                    img_free(&ref);
                    img_free(&got);
                }
    printf("canny_cpu vs canny_serial: %d cases, %d differ\n", cases, diffs);
}

/* A vertical step 0 | 255 between columns 3 and 4: both columns have the same magnitude; the pixel
 * before (left) wins, as cv::Canny's `m > left && m >= right` rule says. A constant image has no
 * edges; a threshold at the magnitude itself is not passed (m > high). */
static void test_tie_rules(void)
{
    struct img g = {0}, out = {0};
    struct canny_params p = {50, 150, 3, 0};
    char err[EDGED_ERR_LEN];
    int ok = 1;

    img_alloc(&g, 8, 5, 1, err);
    img_alloc(&out, 8, 5, 1, err);
    for (int y = 0; y < 5; y++)
        for (int x = 0; x < 8; x++)
            g.px[y * 8 + x] = x >= 4 ? 255 : 0;
    CHECK(canny_serial(&g, &p, &out, err) == 0, "%s", err);
    for (int y = 0; y < 5; y++)
        for (int x = 0; x < 8; x++)
            ok &= out.px[y * 8 + x] == (x == 3 ? 255 : 0);
    CHECK(ok, "step: only column 3 is an edge");
    p.low = p.high = 1020; /* |dx| = 4 * 255 at the step */
    CHECK(canny_serial(&g, &p, &out, err) == 0, "%s", err);
    ok = 1;
    for (int i = 0; i < 40; i++)
        ok &= out.px[i] == 0;
    CHECK(ok, "step: magnitude 1020 does not pass high 1020");
    p.low = p.high = 1019.9f;
    CHECK(canny_serial(&g, &p, &out, err) == 0 && out.px[3] == 255, "step: 1020 passes high 1019.9 (floor 1019)");
    memset(g.px, 77, 40);
    p = (struct canny_params){0, 0, 7, 1};
    CHECK(canny_serial(&g, &p, &out, err) == 0, "%s", err);
    ok = 1;
    for (int i = 0; i < 40; i++)
        ok &= out.px[i] == 0;
    CHECK(ok, "constant image: no edges even at thresholds 0");
    img_free(&g);
    img_free(&out);
}

static void test_bad_knobs(void)
{
    struct img g = {0}, out = {0}, rgb = {0};
    struct canny_params p = {50, 150, 4, 0};
    char err[EDGED_ERR_LEN];

    img_alloc(&g, 4, 4, 1, err);
    img_alloc(&out, 4, 4, 1, err);
    img_alloc(&rgb, 4, 4, 3, err);
    CHECK(canny_serial(&g, &p, &out, err) == EDGED_E_PARAM, "aperture 4");
    CHECK(canny_cpu(&g, &p, 2, &out, err) == EDGED_E_PARAM, "aperture 4 (cpu)");
    p.aperture = 9;
    CHECK(canny_cpu(&g, &p, 2, &out, err) == EDGED_E_PARAM, "aperture 9");
    p = (struct canny_params){NAN, 150, 3, 0};
    CHECK(canny_serial(&g, &p, &out, err) == EDGED_E_PARAM, "NaN low");
    p = (struct canny_params){50, 150, 3, 0};
    CHECK(canny_serial(&rgb, &p, &out, err) == EDGED_E_PARAM, "3-channel input");
    CHECK(canny_cpu(&g, &p, 2, &rgb, err) == EDGED_E_PARAM, "3-channel output");
    CHECK(canny_cpu(&g, &p, -1, &out, err) == EDGED_E_PARAM, "threads -1");
    p = (struct canny_params){150, 50, 3, 0}; /* the C call swaps as cv::Canny does */
    CHECK(canny_serial(&g, &p, &out, err) == 0, "low > high swaps: %s", err);
    img_free(&g);
    img_free(&out);
    img_free(&rgb);
}

#define BAD_SPEC(stmt, what)                                                                                 \
    do {                                                                                                     \
        filter_spec_init(&s, FILTER_CANNY);                                                                  \
        stmt;                                                                                                \
        CHECK(filter_plan_make(&s, 3, plan, err) == EDGED_E_PARAM, "%s accepted", what);                     \
    } while (0)

static void test_plan(void)
{
    struct filter_spec s;
    struct filter_plan *plan = malloc(sizeof(*plan));
    char err[EDGED_ERR_LEN];

    filter_spec_init(&s, FILTER_CANNY);
    CHECK(s.canny.low == 50 && s.canny.high == 150 && s.canny.aperture == 3 && !s.canny.l2gradient, "defaults");
    for (int ch = 1; ch <= 4; ch++) {
        CHECK(filter_plan_make(&s, ch, plan, err) == 0, "plan %d channels: %s", ch, err);
        CHECK(plan->filter == FILTER_CANNY && plan->gray == 1 && plan->planes == 1 && plan->out_ch == 1 &&
                  plan->nconv == 0 && plan->post == POST_THRESHOLD && plan->canny.aperture == 3,
              "plan fields for %d channels", ch);
        CHECK(filter_plan_check(plan, err) == 0, "check: %s", err);
    }
    s.sigma = 1.4f;
    CHECK(filter_plan_make(&s, 3, plan, err) == 0 && plan->nconv == 1 && plan->conv[0].rows == 9 &&
              plan->conv[0].cols == 9 && filter_plan_check(plan, err) == 0,
          "sigma 1.4: a 9x9 pre-blur (%s)", err);
    s.sigma = 0;
    s.size = 5;
    CHECK(filter_plan_make(&s, 1, plan, err) == 0 && plan->nconv == 1 && plan->conv[0].rows == 5, "size 5");
    plan->nconv = 2;
    CHECK(filter_plan_check(plan, err) == EDGED_E_PARAM, "check refuses 2 kernels");
    BAD_SPEC(s.canny.low = -1, "low -1");
    BAD_SPEC(s.canny.high = 40, "low 50 > high 40");
    BAD_SPEC(s.canny.high = INFINITY, "high inf");
    BAD_SPEC(s.canny.low = NAN, "low NaN");
    BAD_SPEC(s.canny.aperture = 1, "aperture 1");
    BAD_SPEC(s.canny.aperture = 6, "aperture 6");
    BAD_SPEC(s.color = COLOR_RGB, "color rgb");
    BAD_SPEC(s.post = POST_CLAMP, "post clamp");
    CHECK(filter_variant_serves(FILTER_CANNY, VARIANT_FAST) && filter_variant_serves(FILTER_CANNY, VARIANT_CPU) &&
              filter_variant_serves(FILTER_CANNY, VARIANT_CPU_SERIAL) &&
              filter_variant_serves(FILTER_CANNY, VARIANT_AUTO) && !filter_variant_serves(FILTER_CANNY, VARIANT_NAIVE) &&
              !filter_variant_serves(FILTER_CANNY, VARIANT_TILED) && filter_variant_serves(FILTER_EDGE, VARIANT_NAIVE),
          "which variants serve canny");
    free(plan);
}

static void test_params(void)
{
    struct params p;
    char err[EDGED_ERR_LEN];
    const char *json = "{\"filter\":\"canny\",\"low\":10.5,\"high\":99,\"aperture\":5,\"l2gradient\":true}";

    params_init(&p, PARAMS_FILTER);
    CHECK(params_set_json(&p, json, strlen(json), err) == 0 && params_validate(&p, err) == 0, "json: %s", err);
    CHECK(p.spec.canny.low == 10.5f && p.spec.canny.high == 99 && p.spec.canny.aperture == 5 && p.spec.canny.l2gradient,
          "json values");
    params_init(&p, PARAMS_FILTER);
    CHECK(params_set_text(&p, "filter", "canny", err) == 0 && params_set_text(&p, "l2gradient", "1", err) == 0 &&
              params_set_text(&p, "aperture", "7", err) == 0 && params_validate(&p, err) == 0,
          "text: %s", err);
    params_init(&p, PARAMS_FILTER);
    CHECK(params_set_text(&p, "aperture", "4", err) == EDGED_E_PARAM, "aperture 4");
    CHECK(params_set_text(&p, "low", "\"5\"", err) == EDGED_E_PARAM, "low as a string");
    CHECK(params_set_text(&p, "high", "-1", err) == EDGED_E_PARAM, "high -1");
    CHECK(params_set_text(&p, "l2gradient", "yes", err) == EDGED_E_PARAM, "l2gradient yes");
    params_init(&p, PARAMS_FILTER);
    CHECK(params_set_text(&p, "low", "5", err) == 0 && params_validate(&p, err) == EDGED_E_PARAM &&
              strstr(err, "canny"),
          "low for edge is refused, naming canny: %s", err);
    params_init(&p, PARAMS_FILTER);
    CHECK(params_set_text(&p, "filter", "canny", err) == 0 && params_set_text(&p, "low", "200", err) == 0 &&
              params_validate(&p, err) == EDGED_E_PARAM,
          "low 200 > high 150");
    params_init(&p, PARAMS_FILTER);
    CHECK(params_set_text(&p, "filter", "canny", err) == 0 && params_set_text(&p, "threshold", "9", err) == 0 &&
              params_validate(&p, err) == EDGED_E_PARAM,
          "threshold is edge's, not canny's");
}

/* A plan on RGB, RGBA and gray+alpha input, with and without the pre-blur: both forms agree, and
 * without pre-blur the gray is pixel_clamp_u8(pixel_luma) of RGB. */
static void test_plan_run(void)
{
    struct filter_spec s;
    struct filter_plan *plan = malloc(sizeof(*plan));
    char err[EDGED_ERR_LEN];
    int x = 0, y = 0;

    for (int ch = 1; ch <= 4; ch++)
        for (int blur = 0; blur <= 2; blur++) {
            struct img in = {0}, a = {0}, b = {0}, g = {0}, c = {0};
            int w = 67, h = 45;
            img_alloc(&in, w, h, ch, err);
            for (size_t i = 0; i < (size_t)w * h * ch; i++)
                in.px[i] = (uint8_t)(((i / ch) % w / 9 + (i / ch) / w / 7) * 40 + check_rng() % 30);
            filter_spec_init(&s, FILTER_CANNY);
            s.sigma = blur == 1 ? 1.2f : 0.0f;
            s.size = blur == 2 ? 7 : 0;
            s.border = BORDER_REFLECT;
            CHECK(filter_plan_make(&s, ch, plan, err) == 0, "%s", err);
            CHECK(canny_plan_run(&in, plan, 1, 0, &a, err) == 0, "serial plan: %s", err);
            CHECK(canny_plan_run(&in, plan, 0, 3, &b, err) == 0, "threaded plan: %s", err);
            CHECK(a.ch == 1 && b.ch == 1 && same(&a, &b, &x, &y), "%d channels blur %d: forms differ at (%d,%d)", ch,
                  blur, x, y);
            if (!blur) {
                img_alloc(&g, w, h, 1, err);
                img_alloc(&c, w, h, 1, err);
                for (int i = 0; i < w * h; i++)
                    g.px[i] = ch >= 3 ? pixel_clamp_u8(pixel_luma(in.px[i * ch], in.px[i * ch + 1], in.px[i * ch + 2]))
                                      : in.px[i * ch];
                CHECK(canny_serial(&g, &plan->canny, &c, err) == 0 && same(&a, &c, &x, &y),
                      "%d channels: the plan's gray is the sample or the luma", ch);
            }
            img_free(&in);
            img_free(&a);
            img_free(&b);
            img_free(&g);
            img_free(&c);
        }
    free(plan);
}

int main(void)
{
    check_rng_init();
    test_tie_rules();
    test_bad_knobs();
    test_plan();
    test_params();
    test_plan_run();
    test_threaded_equals_serial();
    return check_summary();
}
