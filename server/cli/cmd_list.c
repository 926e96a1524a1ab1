/* cmd_list.c — `edged variants` and `edged filters`: what exists, one line each; for variants also
 * whether this machine can run it, and the CUDA devices it sees. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "errors.h"
#include "filter.h"
#include "gconv.h"
#include "ops/opts.h"
#include "variant.h"

/* Whether the GPU variants can run here: a CUDA context opens (as `edged serve` would open it).
 * Returns 1, or 0 with the reason in why. */
static int gpu_here(char *why, size_t cap)
{
    struct gconv_ctx *ctx = NULL;
    char err[EDGED_ERR_LEN];

    if (!EDGED_GPU) {
        snprintf(why, cap, "built without CUDA");
        return 0;
    }
    if (gconv_open(&ctx, 0, 1, err) < 0) {
        snprintf(why, cap, "%s", err);
        return 0;
    }
    gconv_close(ctx);
    return 1;
}

/* One CUDA device as the listing shows it. */
struct list_device {
    int number; /* CUDA device number */
    struct gconv_info info;
};
#define LIST_MAX_DEVICES 64

/* The devices this process sees (CUDA_VISIBLE_DEVICES applies), each queried without opening a
 * context (gconv_device_query), into d (LIST_MAX_DEVICES); their count. why: the reason there are
 * none, or why one could not be queried (then it is left out). */
static int list_devices(struct list_device *d, char *why, size_t cap)
{
    char err[EDGED_ERR_LEN];
    int n = gconv_device_count(), k = 0;

    n = n > LIST_MAX_DEVICES ? LIST_MAX_DEVICES : n;
    if (n == 0 && gconv_device_query(0, &d[0].info, err) < 0) /* none: the query says why */
        snprintf(why, cap, "%s", err);
    for (int i = 0; i < n; i++) {
        if (gconv_device_query(i, &d[k].info, err) < 0) {
            snprintf(why, cap, "%s", err);
            continue;
        }
        d[k++].number = i;
    }
    return k;
}

/* What `device`, --gpus and --device take: the CUDA device numbers this process sees. */
static void print_devices(const struct list_device *d, int n, const char *why)
{
    if (n == 0) {
        printf("devices: none (%s)\n", why);
        return;
    }
    printf("devices: %d (the CUDA device numbers that --gpus, --device and a request's `device` take)\n", n);
    for (int i = 0; i < n; i++)
        printf("  %-3d %-30s cc %d.%d  %3d SMs  %6.1f GiB\n", d[i].number, d[i].info.name, d[i].info.cc_major,
               d[i].info.cc_minor, d[i].info.sms, (double)d[i].info.global_mem / (1 << 30));
}

static const char *variant_where(int v)
{
    return v == VARIANT_AUTO ? "any" : variant_is_gpu(v) ? (EDGED_GPU && variant_built(v) ? "gpu" : "gpu, not built")
                                                          : "cpu";
}

static int variant_here(int v, int gpu) { return !variant_is_gpu(v) || (gpu && EDGED_GPU && variant_built(v)); }

static int list_variants(void)
{
    static struct list_device dev[LIST_MAX_DEVICES];
    char why[EDGED_ERR_LEN], dwhy[EDGED_ERR_LEN] = "";
    int gpu = gpu_here(why, sizeof(why)), ndev = list_devices(dev, dwhy, sizeof(dwhy));

    printf("%-16s %-15s %-4s %s\n", "variant", "runs on", "here", "what it is");
    for (int v = 0; v < VARIANT_COUNT; v++)
        printf("%-16s %-15s %-4s %s\n", variant_name(v), variant_where(v), variant_here(v, gpu) ? "yes" : "no",
               variant_description(v));
    print_devices(dev, ndev, dwhy);
    for (int v = 0; gpu && v < VARIANT_COUNT; v++)
        if (!variant_built(v))
            printf("here: %s cannot run (%s)\n", variant_name(v), variant_missing(v));
    if (gpu)
        printf("here: every other variant can run (auto picks a GPU variant)\n");
    else
        printf("here: the GPU variants cannot run (%s); auto runs cpu\n", why);
    return EXIT_OK;
}

/* The same as list_variants, as one JSON object: variants (name, runs_on, built, here, the reason
 * when not, description), devices (number, name, compute_capability, sms, memory_bytes) and, when the
 * list is empty, devices_reason. */
static int list_variants_json(void)
{
    static struct list_device dev[LIST_MAX_DEVICES];
    char why[EDGED_ERR_LEN], dwhy[EDGED_ERR_LEN] = "", cc[16], *text;
    int gpu = gpu_here(why, sizeof(why)), ndev = list_devices(dev, dwhy, sizeof(dwhy));
    cJSON *root = cJSON_CreateObject(), *vs = cJSON_AddArrayToObject(root, "variants"),
          *ds = cJSON_AddArrayToObject(root, "devices");

    for (int v = 0; v < VARIANT_COUNT; v++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", variant_name(v));
        cJSON_AddStringToObject(o, "runs_on", v == VARIANT_AUTO ? "any" : variant_is_gpu(v) ? "gpu" : "cpu");
        cJSON_AddBoolToObject(o, "built", !variant_is_gpu(v) || (EDGED_GPU && variant_built(v)));
        cJSON_AddBoolToObject(o, "here", variant_here(v, gpu));
        if (!variant_here(v, gpu))
            cJSON_AddStringToObject(o, "reason", gpu ? variant_missing(v) : why);
        cJSON_AddStringToObject(o, "description", variant_description(v));
        cJSON_AddItemToArray(vs, o);
    }
    for (int i = 0; i < ndev; i++) {
        cJSON *o = cJSON_CreateObject();
        snprintf(cc, sizeof(cc), "%d.%d", dev[i].info.cc_major, dev[i].info.cc_minor);
        cJSON_AddNumberToObject(o, "number", dev[i].number);
        cJSON_AddStringToObject(o, "name", dev[i].info.name);
        cJSON_AddStringToObject(o, "compute_capability", cc);
        cJSON_AddNumberToObject(o, "sms", dev[i].info.sms);
        cJSON_AddNumberToObject(o, "memory_bytes", (double)dev[i].info.global_mem);
        cJSON_AddItemToArray(ds, o);
    }
    if (ndev == 0)
        cJSON_AddStringToObject(root, "devices_reason", dwhy);
    if (!(text = cJSON_Print(root))) {
        cJSON_Delete(root);
        fprintf(stderr, "edged variants: out of memory\n");
        return EXIT_FAIL;
    }
    puts(text);
    cJSON_free(text);
    cJSON_Delete(root);
    return EXIT_OK;
}

static int list_filters(void)
{
    for (int f = 0; f < FILTER_COUNT; f++)
        printf("%-11s %s\n", filter_name(f), filter_description(f));
    return EXIT_OK;
}

static int list_variants_cmd;

static const struct opts_spec variants_opts[] = {
    {"json", NULL, "print one JSON object: variants (name, runs_on, built, here, reason, description)\n"
                   "and devices (number, name, compute_capability, sms, memory_bytes; devices_reason when\n"
                   "there are none)"},
};

static void list_usage(FILE *f)
{
    if (!list_variants_cmd) {
        fputs("usage: edged filters\n  lists the filters with one line each\n", f);
        return;
    }
    fputs("usage: edged variants [--json]\n"
          "  lists the convolution variants with one line each (name, where it runs, whether it can run\n"
          "  here, what it is), then the CUDA devices this process sees (number, name, compute\n"
          "  capability, SMs, memory)\n",
          f);
    opts_print(f, variants_opts, 1);
}

static int list_opt(void *app, int i, const char *val, char *err)
{
    (void)i, (void)val, (void)err;
    *(int *)app = 1;
    return 0;
}

int list_main(int argc, char **argv)
{
    char err[EDGED_ERR_LEN];
    int rc, json = 0;

    list_variants_cmd = strcmp(argv[0], "variants") == 0;
    if ((rc = opts_parse(argc, argv, variants_opts, list_variants_cmd, list_opt, &json, NULL, err)) != 0)
        return opts_usage_exit(rc, argv[0], err, list_usage);
    if (!list_variants_cmd)
        return list_filters();
    return json ? list_variants_json() : list_variants();
}
