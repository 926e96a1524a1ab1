/* params.h — request parameters (query string, form fields, JSON `params`) into a filter_spec
 * and the output options, strictly: unknown keys, wrong types and out-of-range values are errors
 * that name the field. */
#ifndef EDGED_PARAMS_H
#define EDGED_PARAMS_H

#include <stddef.h>

#include "filter.h"
#include "variant.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PARAMS_MAX_JSON (256 * 1024) /* largest JSON `params` text (63x63 taps fit easily) */
#define PARAMS_MAX_DEPTH 5           /* object > ops > step > taps > row */
#define PARAMS_QUOTE_MAX 64          /* bytes of input an error message quotes */
#define PARAMS_DEFAULT_PNG_LEVEL 1   /* zlib level: level 1 is ~3x faster than 6 for ~10% size */

enum params_output { PARAMS_OUTPUT_AUTO, PARAMS_OUTPUT_PNG, PARAMS_OUTPUT_JSON };

/* The image format of the answer: AUTO lets the Accept header pick (PNG unless it ranks
 * image/jpeg or image/webp above it), or on the command line the OUTPUT name. WebP is lossy when
 * the request gives a quality, lossless otherwise. */
enum params_format { PARAMS_FORMAT_AUTO, PARAMS_FORMAT_PNG, PARAMS_FORMAT_JPEG, PARAMS_FORMAT_WEBP };
#define PARAMS_DEFAULT_QUALITY 90 /* JPEG output quality */
#define PARAMS_MAX_DEVICE 63      /* largest CUDA device number `device` takes */

/* EXIF orientation of JPEG/WebP input: applied (default) or ignored. */
enum params_orientation { PARAMS_ORIENT_EXIF, PARAMS_ORIENT_IGNORE };

/* Which endpoint the parameters are for: compare takes `variants` (a list) instead of `variant`. */
enum params_mode { PARAMS_FILTER, PARAMS_COMPARE };

/* Every field a request may set. params_init gives the documented defaults; `given` records
 * which fields a request set (bit PARAMS_F_*), so that knobs given to the wrong filter are errors. */
struct params {
    struct filter_spec spec;
    enum variant variant;      /* default VARIANT_AUTO */
    int block;                 /* GPU block side; 0 = VARIANT_DEFAULT_BLOCK */
    int device;                /* CUDA device number 0..PARAMS_MAX_DEVICE the GPU work runs on; -1 (default):
                                * any, the scheduler picks */
    enum params_output output; /* AUTO: the Accept header decides, PNG otherwise */
    int png_level;             /* 0..9 */
    int bit_depth;             /* 8, or 1 for single-channel binary outputs (edge) */
    unsigned variants;         /* compare: bit (1u << v) per listed variant; 0 = every one that serves */
    enum params_format format; /* output image format */
    int quality;               /* JPEG and lossy WebP output 1..100 */
    enum params_orientation orientation;
    unsigned given;
    unsigned source_seen; /* fields the current text source (query string or form) has set */
    enum params_mode mode;
    int nops;                                 /* a pipeline's steps (`ops`); 0: the one filter of spec */
    struct filter_spec ops[FILTER_MAX_STEPS]; /* each step as one filter's request gives it */
};

enum params_field_bit {
    PARAMS_F_FILTER = 1u << 0,
    PARAMS_F_VARIANT = 1u << 1,
    PARAMS_F_THRESHOLD = 1u << 2,
    PARAMS_F_BORDER = 1u << 3,
    PARAMS_F_COLOR = 1u << 4,
    PARAMS_F_POST = 1u << 5,
    PARAMS_F_SIZE = 1u << 6,
    PARAMS_F_SIGMA = 1u << 7,
    PARAMS_F_TAPS = 1u << 8,
    PARAMS_F_NORMALIZE = 1u << 9,
    PARAMS_F_BLOCK = 1u << 10,
    PARAMS_F_OUTPUT = 1u << 11,
    PARAMS_F_PNG_LEVEL = 1u << 12,
    PARAMS_F_BIT_DEPTH = 1u << 13,
    PARAMS_F_VARIANTS = 1u << 14,
    PARAMS_F_FORMAT = 1u << 15,
    PARAMS_F_QUALITY = 1u << 16,
    PARAMS_F_ORIENTATION = 1u << 17,
    PARAMS_F_LOW = 1u << 18,
    PARAMS_F_HIGH = 1u << 19,
    PARAMS_F_APERTURE = 1u << 20,
    PARAMS_F_L2GRADIENT = 1u << 21,
    PARAMS_F_VALUE = 1u << 22,
    PARAMS_F_OPS = 1u << 23,
    PARAMS_F_DEVICE = 1u << 24,
};

/* Defaults: filter edge (threshold 5, reflect border), variant auto, png_level 1, bit_depth 8,
 * format auto, quality 90, orientation exif, device -1 (any). */
void params_init(struct params *p, enum params_mode mode);

/* Sets one field from a text value (query string or form field). Numbers must be JSON numbers,
 * booleans true/false/1/0, taps a JSON array of rows, variants a comma-separated list; the value
 * must be valid UTF-8 and the field not already given by the same source (params_source_begin).
 * Returns 0 or EDGED_E_PARAM with a message naming the field; input it quotes is printable ASCII. */
int params_set_text(struct params *p, const char *key, const char *value, char *err);

/* Starts the next text source (params_init starts the first): a later source may set a field
 * again and wins; within one source a repeated field is an error. */
void params_source_begin(struct params *p);

/* Applies the fields of a JSON object (len bytes, need not be NUL-terminated; parsed from a
 * bounded copy). Invalid JSON, a non-object, duplicate keys or nesting deeper than
 * PARAMS_MAX_DEPTH, invalid UTF-8, a number that is not exactly a JSON
 * number (05, 5.) and a string holding U+0000 are EDGED_E_PARAM too. Fields set here override earlier ones. */
int params_set_json(struct params *p, const char *text, size_t len, char *err);

/* `ops`: a JSON array of 1..FILTER_MAX_STEPS step objects, each holding the fields one filter's
 * request takes (filter, its knobs, border, color, post) and parsed by the same setters; the
 * request's other fields (variant, output, format...) stay beside `ops`, and filter knobs may not.
 * Errors name the step: "ops[2].size: ...". */

/* Checks the combination (knobs that the filter does not take, custom without taps, bit_depth 1
 * for a non-binary filter, quality with format png, output options given to /v1/compare, which
 * encodes no image, block or device with CPU variants only) and resolves the spec as filter_plan_make would. 0 or EDGED_E_PARAM. */
int params_validate(const struct params *p, char *err);

/* The plan of request p for an input of ch channels (filter_plan_make). bit_depth 1 needs a
 * one-channel output (EDGED_E_PARAM names the alpha that prevents it) and lets the backend return
 * the map packed (accept_packed). */
int params_plan(const struct params *p, int ch, struct filter_plan *plan, char *err);

/* A printable-ASCII copy of at most PARAMS_QUOTE_MAX bytes of s for a message that quotes input
 * (buf holds PARAMS_QUOTE_MAX + 1 bytes); returns buf. */
const char *params_quote(const char *s, char *buf);

/* The output format of request p: `format` when given, else `chosen` (PNG, JPEG or WEBP: what
 * the Accept header or the OUTPUT name picked, which `by` names for the message). Returns that
 * format, or EDGED_E_PARAM when p gives a quality and the format is PNG (quality applies to
 * format=jpeg or webp), or png_level and the format is not PNG. */
int params_output_format(const struct params *p, enum params_format chosen, const char *by, char *err);

/* "png", "jpeg", "webp" ("auto" for AUTO): the format's name as `format` takes it. */
const char *params_format_name(enum params_format f);

/* Name of the field with bit `bit` ("threshold"), for messages. */
const char *params_field_name(unsigned bit);

#ifdef __cplusplus
}
#endif
#endif
