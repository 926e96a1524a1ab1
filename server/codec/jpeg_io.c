/* jpeg_io.c — JPEG marker walk (peek, scan count, orientation), libjpeg-turbo decode (libjpeg API) and
 * encode (TurboJPEG 2.1). */
#include "codec/jpeg_io.h"

#include <setjmp.h>
#include <stdio.h> /* before jpeglib.h, which uses FILE */
#include <stdlib.h>
#include <string.h>
#include <jpeglib.h>
#include <turbojpeg.h>

#include "errors.h"
#include "codec/exif.h"

#define JPEG_M_SOS 0xDA
#define JPEG_M_EOI 0xD9
#define JPEG_M_SOI 0xD8
#define JPEG_M_APP0 0xE0
#define JPEG_M_APP1 0xE1
#define JPEG_M_APP14 0xEE
#define JPEG_ADOBE_TRANSFORM_AT 11 /* "Adobe", version, flags0, flags1, transform */

/* Markers seen up to the first scan. */
struct walk {
    int have_sof, jfif, adobe; /* adobe: the APP14 transform, -1 without one */
    uint8_t ids[4];
    int hs[4], vs[4];
};

int jpegio_is_jpeg(const uint8_t *d, size_t n)
{
    return d && n >= 3 && d[0] == 0xFF && d[1] == JPEG_M_SOI && d[2] == 0xFF;
}

static int is_sof(int m)
{
    return m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC;
}

/* SOF0/1 baseline and extended, SOF2 progressive, SOF9/10 their arithmetic twins; SOF3/11
 * lossless and SOF5-7/13-15 hierarchical are not served by libjpeg-turbo. */
static int parse_sof(int m, const uint8_t *s, size_t sl, struct jpegio_info *info, struct walk *wk, char *err)
{
    int nf;

    if (sl < 6)
        return edged_fail(err, EDGED_E_BAD_IMAGE, "corrupt JPEG: frame header of %zu bytes", sl);
    if ((m & 3) == 3 || (m & 7) >= 5)
        return edged_fail(err, EDGED_E_NOT_PNG,
                          "unsupported JPEG: %s (SOF%d); baseline and progressive are accepted",
                          (m & 3) == 3 ? "lossless" : "hierarchical", m - 0xC0);
    if (s[0] != 8)
        return edged_fail(err, EDGED_E_NOT_PNG, "unsupported JPEG: %d-bit samples; 8-bit is accepted", s[0]);
    info->h = s[1] << 8 | s[2];
    info->w = s[3] << 8 | s[4];
    nf = s[5];
    if (info->w == 0)
        return edged_fail(err, EDGED_E_BAD_IMAGE, "corrupt JPEG: frame width 0");
    if (info->h == 0)
        return edged_fail(err, EDGED_E_NOT_PNG, "unsupported JPEG: height 0 in the frame header (DNL)");
    if (nf != 1 && nf != 3 && nf != 4)
        return edged_fail(err, EDGED_E_NOT_PNG, "unsupported JPEG: %d components; 1, 3 or 4 are accepted",
                          nf);
    if (sl < 6 + 3 * (size_t)nf)
        return edged_fail(err, EDGED_E_BAD_IMAGE, "corrupt JPEG: frame header short for %d components", nf);
    for (int i = 0; i < nf; i++) {
        wk->ids[i] = s[6 + 3 * i];
        wk->hs[i] = s[7 + 3 * i] >> 4;
        wk->vs[i] = s[7 + 3 * i] & 15;
        if (wk->hs[i] < 1 || wk->hs[i] > 4 || wk->vs[i] < 1 || wk->vs[i] > 4)
            return edged_fail(err, EDGED_E_BAD_IMAGE, "corrupt JPEG: component %d sampling %dx%d", i,
                              wk->hs[i], wk->vs[i]);
    }
    info->components = nf;
    info->progressive = (m & 3) == 2;
    info->arithmetic = m >= 0xC8;
    wk->have_sof = 1;
    return 0;
}

/* The segment of marker m at s (sl bytes after the length). */
static int take_segment(int m, const uint8_t *s, size_t sl, struct jpegio_info *info, struct walk *wk,
                        char *err)
{
    if (is_sof(m)) {
        if (wk->have_sof)
            return edged_fail(err, EDGED_E_BAD_IMAGE, "corrupt JPEG: two frame headers");
        return parse_sof(m, s, sl, info, wk, err);
    }
    if (m == JPEG_M_APP14 && sl > JPEG_ADOBE_TRANSFORM_AT && memcmp(s, "Adobe", 5) == 0)
        wk->adobe = s[JPEG_ADOBE_TRANSFORM_AT];
    else if (m == JPEG_M_APP0 && sl >= 5 && memcmp(s, "JFIF\0", 5) == 0)
        wk->jfif = 1;
    else if (m == JPEG_M_APP1 && info->orientation == 0 && sl >= 6 && memcmp(s, "Exif\0\0", 6) == 0)
        info->orientation = exif_orientation(s, sl);
    return 0;
}

#define MARKER_NONE (-1)  /* next_marker: the byte there is not 0xFF */
#define MARKER_ENDED (-2) /* next_marker: the data ends first */

/* The code of the marker at d[*at] (0xFF, any fill bytes 0xFF, then the code), *at moved past it;
 * MARKER_NONE or MARKER_ENDED. */
static int next_marker(const uint8_t *d, size_t n, size_t *at)
{
    if (*at >= n)
        return MARKER_ENDED;
    if (d[*at] != 0xFF)
        return MARKER_NONE;
    while (*at < n && d[*at] == 0xFF)
        (*at)++;
    return *at < n ? d[(*at)++] : MARKER_ENDED;
}

/* Markers from after SOI up to the first SOS, whose header must be complete. */
static int walk_markers(const uint8_t *d, size_t n, struct jpegio_info *info, struct walk *wk, char *err)
{
    size_t at = 2, len;
    int m, rc;

    for (;;) {
        if ((m = next_marker(d, n, &at)) == MARKER_ENDED)
            return edged_fail(err, EDGED_E_BAD_IMAGE,
                              "corrupt JPEG: truncated before the first scan (%zu bytes)", n);
        if (m == MARKER_NONE)
            return edged_fail(err, EDGED_E_BAD_IMAGE, "corrupt JPEG: no marker at byte %zu", at);
        if ((m >= 0xD0 && m <= 0xD7) || m == 0x01)
            continue;
        if (m == 0x00 || m == JPEG_M_SOI || m == JPEG_M_EOI)
            return edged_fail(err, EDGED_E_BAD_IMAGE, "corrupt JPEG: marker 0x%02X before the first scan", m);
        if (at + 2 > n || at + (len = (size_t)d[at] << 8 | d[at + 1]) > n)
            return edged_fail(err, EDGED_E_BAD_IMAGE, "corrupt JPEG: truncated in marker 0x%02X (%zu bytes)",
                              m, n);
        if (len < 2)
            return edged_fail(err, EDGED_E_BAD_IMAGE, "corrupt JPEG: marker 0x%02X length %zu", m, len);
        if (m == JPEG_M_SOS)
            return wk->have_sof
                       ? 0
                       : edged_fail(err, EDGED_E_BAD_IMAGE, "corrupt JPEG: scan before the frame header");
        if ((rc = take_segment(m, d + at + 2, len - 2, info, wk, err)) < 0)
            return rc;
        at += len;
    }
}

/* libjpeg's rules (jdapimin.c default_decompress_parms): JFIF means YCbCr, else the Adobe
 * transform, else component ids 'R','G','B'; four components are CMYK unless Adobe says YCCK. */
static void classify(struct jpegio_info *info, const struct walk *wk)
{
    int nf = info->components;
    int ch = nf > 1 && (wk->hs[1] != wk->hs[2] || wk->vs[1] != wk->vs[2]);
    int h = wk->hs[0], v = wk->vs[0];

    if (nf == 1)
        info->cs = JPEGIO_CS_GRAY;
    else if (nf == 3)
        info->cs = wk->jfif         ? JPEGIO_CS_YCBCR
                   : wk->adobe >= 0 ? (wk->adobe ? JPEGIO_CS_YCBCR : JPEGIO_CS_RGB)
                   : (wk->ids[0] == 'R' && wk->ids[1] == 'G' && wk->ids[2] == 'B') ? JPEGIO_CS_RGB
                                                                                   : JPEGIO_CS_YCBCR;
    else
        info->cs = wk->adobe == 2 ? JPEGIO_CS_YCCK : JPEGIO_CS_CMYK;
    info->ch = nf == 1 ? 1 : 3;
    for (int i = 0, at = 0; i < nf; i++)
        at += snprintf(info->factors + at, sizeof(info->factors) - (size_t)at, "%s%dx%d", i ? "," : "", wk->hs[i],
                       wk->vs[i]);
    if (nf == 1)
        info->sub = JPEGIO_SUB_GRAY;
    else if (ch || wk->hs[1] != 1 || wk->vs[1] != 1)
        info->sub = JPEGIO_SUB_OTHER;
    else
        info->sub = h == 1 && v == 1   ? JPEGIO_SUB_444
                    : h == 2 && v == 1 ? JPEGIO_SUB_422
                    : h == 2 && v == 2 ? JPEGIO_SUB_420
                    : h == 1 && v == 2 ? JPEGIO_SUB_440
                    : h == 4 && v == 1 ? JPEGIO_SUB_411
                                       : JPEGIO_SUB_OTHER;
}

/* Walks the segments after SOI, each scan's entropy-coded data included, up to EOI, counting the
 * scans (SOS markers) on the way into *scans. 1 when an EOI ends the walk, 0 when the data ends
 * first or a segment is malformed: libjpeg stops at that point too, so the count is never below
 * the scans it would read. */
static int walk_scans(const uint8_t *d, size_t n, int *scans)
{
    size_t at = 2, len;
    int m, in_scan = 0;

    *scans = 0;
    while (at < n) {
        if (in_scan) { /* entropy-coded data: 0xFF only starts a stuffed byte or a marker */
            const uint8_t *ff = memchr(d + at, 0xFF, n - at);
            if (!ff)
                return 0;
            at = (size_t)(ff - d);
        }
        if ((m = next_marker(d, n, &at)) < 0)
            return 0;
        if (m == JPEG_M_EOI)
            return 1;
        if (m == 0x00 || (m >= 0xD0 && m <= 0xD7) || m == 0x01) { /* stuffed byte, restart, TEM */
            if (m == 0x00 && !in_scan)
                return 0;
            continue;
        }
        if (at + 2 > n || (len = (size_t)d[at] << 8 | d[at + 1]) < 2 || at + len > n)
            return 0;
        at += len;
        in_scan = m == JPEG_M_SOS;
        *scans += in_scan;
    }
    return 0;
}

int jpegio_peek(const uint8_t *d, size_t n, struct jpegio_info *info, char *err)
{
    struct walk wk = {.adobe = -1};
    int rc;

    memset(info, 0, sizeof(*info));
    if (!jpegio_is_jpeg(d, n))
        return edged_fail(err, EDGED_E_NOT_PNG, "not a JPEG: no SOI marker");
    if ((rc = walk_markers(d, n, info, &wk, err)) < 0)
        return rc;
    if (info->orientation == 0)
        info->orientation = 1;
    classify(info, &wk);
    walk_scans(d, n, &info->scans);
    return 0;
}

int jpegio_complete(const uint8_t *d, size_t n)
{
    int scans;

    return jpegio_is_jpeg(d, n) && walk_scans(d, n, &scans);
}

int jpegio_check_scans(const struct jpegio_info *info, char *err)
{
    if (info->scans <= JPEGIO_MAX_SCANS)
        return 0;
    return edged_fail(err, EDGED_E_BAD_IMAGE, "unsupported JPEG: %d scans; at most %d are decoded (each scan "
                      "passes over the whole image)", info->scans, JPEGIO_MAX_SCANS);
}

int jpegio_orientation(const uint8_t *d, size_t n)
{
    struct jpegio_info info;
    struct walk wk = {.adobe = -1};

    memset(&info, 0, sizeof(info));
    if (!jpegio_is_jpeg(d, n))
        return 1;
    walk_markers(d, n, &info, &wk, NULL);
    return info.orientation ? info.orientation : 1;
}

const char *jpegio_subsamp_name(enum jpegio_subsamp s)
{
    static const char *names[] = {"gray", "4:4:4", "4:2:2", "4:2:0", "4:4:0", "4:1:1", "other"};

    return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

const char *jpegio_colorspace_name(enum jpegio_colorspace cs)
{
    static const char *names[] = {"gray", "YCbCr", "RGB", "CMYK", "YCCK"};

    return (unsigned)cs < sizeof(names) / sizeof(names[0]) ? names[cs] : "?";
}

/* libjpeg's error manager for one decode: error_exit and every warning (emit_message at level
 * -1: premature end of data, corrupt entropy data) unwind to the setjmp with libjpeg's message,
 * so that a damaged file is an error and never a grey or smeared bottom; trace messages are
 * dropped. The progress monitor refuses a file past JPEGIO_MAX_SCANS scans while it is read (the
 * peek counted them already; this holds whatever the marker walk missed). cmyk is the decode's
 * one allocation besides the image, here so that the unwinding frees it. */
struct jdec {
    struct jpeg_error_mgr mgr;
    struct jpeg_progress_mgr prog;
    jmp_buf jb;
    char msg[JMSG_LENGTH_MAX];
    const char *stage; /* "header" or "decode", for the message */
    uint8_t *cmyk;
};

static void jdec_error_exit(j_common_ptr c)
{
    struct jdec *j = (struct jdec *)c->err;

    c->err->format_message(c, j->msg);
    longjmp(j->jb, 1);
}

static void jdec_emit(j_common_ptr c, int level)
{
    if (level < 0)
        jdec_error_exit(c);
}

static void jdec_progress(j_common_ptr c)
{
    j_decompress_ptr d = (j_decompress_ptr)c;
    struct jdec *j = (struct jdec *)c->err;

    if (d->input_scan_number <= JPEGIO_MAX_SCANS)
        return;
    snprintf(j->msg, sizeof(j->msg), "more than %d scans", JPEGIO_MAX_SCANS);
    longjmp(j->jb, 1);
}

/* CMYK as libjpeg delivers it (Adobe's inverted samples) to RGB with OpenCV's formula
 * (icvCvt_CMYK2BGR_8u_C4C3R), so that decoded pixels match cv2.imdecode's exactly. */
static void cmyk_to_rgb(const uint8_t *cmyk, size_t npx, uint8_t *rgb)
{
    for (size_t i = 0; i < npx; i++, cmyk += 4, rgb += 3) {
        int k = cmyk[3];
        for (int c = 0; c < 3; c++)
            rgb[c] = (uint8_t)(k - ((255 - cmyk[c]) * k >> 8));
    }
}

/* The decode after the setjmp: header, the output colour space, the rows straight into out (CMYK
 * and YCCK into j->cmyk, converted after). Errors unwind through j. */
static int jdec_run(j_decompress_ptr ci, struct jdec *j, const struct jpegio_info *info, struct img *out,
                    char *err)
{
    int cmykin = info->cs == JPEGIO_CS_CMYK || info->cs == JPEGIO_CS_YCCK, rc;
    size_t npx;

    jpeg_read_header(ci, TRUE);
    if ((int)ci->image_width != info->w || (int)ci->image_height != info->h)
        return edged_fail(err, EDGED_E_BAD_IMAGE, "corrupt JPEG: frame header disagrees with the decoder");
    ci->out_color_space = cmykin ? JCS_CMYK : info->ch == 1 ? JCS_GRAYSCALE : JCS_EXT_RGB;
    if ((rc = img_alloc(out, info->w, info->h, info->ch, err)) < 0)
        return rc;
    npx = (size_t)info->w * (size_t)info->h;
    if (cmykin && !(j->cmyk = malloc(npx * 4)))
        return edged_fail(err, EDGED_E_NOMEM, "out of memory for a %dx%d CMYK JPEG", info->w, info->h);
    j->stage = "decode";
    jpeg_start_decompress(ci);
    if (ci->output_components != (cmykin ? 4 : info->ch))
        return edged_fail(err, EDGED_E_BAD_IMAGE, "corrupt JPEG: %d components decoded, %d expected",
                          ci->output_components, cmykin ? 4 : info->ch);
    while (ci->output_scanline < ci->output_height) {
        JSAMPROW row = cmykin ? j->cmyk + (size_t)ci->output_scanline * info->w * 4
                              : out->px + (size_t)ci->output_scanline * out->stride;
        jpeg_read_scanlines(ci, &row, 1);
    }
    jpeg_finish_decompress(ci);
    if (cmykin)
        cmyk_to_rgb(j->cmyk, npx, out->px);
    return 0;
}

/* libjpeg's own API rather than TurboJPEG's: TurboJPEG 2.1 refuses every sampling it has no name
 * for (4:1:0, 1x3, 3x1, ...), which libjpeg decodes, as OpenCV does. Defaults as TurboJPEG's and
 * OpenCV's: accurate integer IDCT, fancy upsampling. */
int jpegio_decode(const uint8_t *d, size_t n, const struct jpegio_info *info, struct img *out, char *err)
{
    struct jpeg_decompress_struct ci;
    struct jdec j = {.stage = "header"};
    int rc;

    memset(out, 0, sizeof(*out));
    ci.err = jpeg_std_error(&j.mgr);
    j.mgr.error_exit = jdec_error_exit;
    j.mgr.emit_message = jdec_emit;
    j.prog.progress_monitor = jdec_progress;
    if (setjmp(j.jb)) {
        rc = edged_fail(err, EDGED_E_BAD_IMAGE, "corrupt JPEG: %s: %s", j.stage, j.msg);
        goto out;
    }
    jpeg_create_decompress(&ci);
    ci.progress = &j.prog;
    jpeg_mem_src(&ci, d, (unsigned long)n);
    rc = jdec_run(&ci, &j, info, out, err);
out:
    if (rc < 0)
        img_free(out);
    free(j.cmyk);
    jpeg_destroy_decompress(&ci);
    return rc;
}

/* Rows in the layout TurboJPEG takes: 1 and 3 channels as they are, 4 as RGBX (alpha ignored);
 * gray+alpha and packed maps are copied to plain gray first (*tmp, caller frees). */
static int encode_source(const struct img *im, const uint8_t **src, size_t *pitch, int *pf, uint8_t **tmp,
                         char *err)
{
    *src = im->px;
    *pitch = im->stride;
    *pf = im->ch == 1 ? TJPF_GRAY : im->ch == 3 ? TJPF_RGB : TJPF_RGBX;
    if (im->ch != 2 && !im->packed)
        return 0;
    if (!(*tmp = malloc((size_t)im->w * (size_t)im->h)))
        return edged_fail(err, EDGED_E_NOMEM, "out of memory encoding JPEG");
    for (int y = 0; y < im->h; y++) {
        const uint8_t *row = im->px + (size_t)y * im->stride;
        uint8_t *o = *tmp + (size_t)y * im->w;
        for (int x = 0; x < im->w; x++)
            o[x] = im->packed ? ((row[x >> 3] >> (7 - (x & 7))) & 1 ? 255 : 0) : row[2 * x];
    }
    *src = *tmp;
    *pitch = (size_t)im->w;
    *pf = TJPF_GRAY;
    return 0;
}

int jpegio_encode(const struct img *im, int quality, uint8_t **out, size_t *out_len, char *err)
{
    tjhandle tj = NULL;
    uint8_t *tmp = NULL, *jpg = NULL;
    unsigned long jlen = 0;
    const uint8_t *src;
    size_t pitch;
    int pf, rc;

    *out = NULL;
    *out_len = 0;
    if (quality < 1 || quality > 100)
        return edged_fail(err, EDGED_E_PARAM, "quality: %d invalid; must be 1..100", quality);
    if (!im->px || im->w < 1 || im->h < 1 || im->ch < 1 || im->ch > 4)
        return edged_fail(err, EDGED_E_INTERNAL, "jpeg encode: bad image %dx%dx%d", im->w, im->h, im->ch);
    if ((rc = encode_source(im, &src, &pitch, &pf, &tmp, err)) < 0)
        goto out;
    if (!(tj = tjInitCompress())) {
        rc = edged_fail(err, EDGED_E_NOMEM, "out of memory starting the JPEG encoder");
        goto out;
    }
    if (tjCompress2(tj, src, im->w, (int)pitch, im->h, pf, &jpg, &jlen,
                    pf == TJPF_GRAY ? TJSAMP_GRAY : TJSAMP_420, quality, 0) < 0) {
        rc = edged_fail(err, EDGED_E_INTERNAL, "jpeg encode: %s", tjGetErrorStr2(tj));
        goto out;
    }
    /* The caller frees with free(): copy out of TurboJPEG's buffer, which needs tjFree. */
    if (!(*out = malloc(jlen))) {
        rc = edged_fail(err, EDGED_E_NOMEM, "out of memory encoding JPEG");
        goto out;
    }
    memcpy(*out, jpg, jlen);
    *out_len = jlen;
    rc = 0;
out:
    tjFree(jpg);
    tjDestroy(tj);
    free(tmp);
    return rc;
}
