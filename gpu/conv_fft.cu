/* conv_fft.cu — fft: overlap-save correlation for large full-rank taps, by a fused tile kernel or cuFFT. */
#include <string.h>

#include "gconv_internal.h"

#if EDGED_FFT
#include <cufft.h>

#include "fast_common.cuh"
#include "fft_tile_core.h"

/* Why: direct correlation costs rows*cols FMAs per output (3,969 at 63x63), the FFT about
 * 2*log2(n*n) multiply-adds per sample of an n x n tile whatever the taps. Each tile is the image
 * under the border rule from (x0 - cols/2, y0 - rows/2), n x n samples; its circular correlation
 * with the zero-padded taps equals the linear one on the first n-cols+1 columns and n-rows+1 rows
 * (no wrap-around reaches them), so the tiles overlap by the taps' extent and each writes only
 * that valid part (overlap-save). Correlation, not convolution: tile spectrum times the CONJUGATE
 * of the taps' spectrum (the taps are real), scaled by 1/(n*n) since cuFFT does not normalise. */
#define FFT_MIN_N 32    /* tile sides tried: powers of two from here ... */
#define FFT_MAX_N 2048  /* ... to here */
#define FFT_PASS_COST 6 /* per-sample cost of gather, multiply and scatter, in FFT-stage units */
#define FFT_MAX_BATCH 65535                 /* tiles of one call: the launch grids' z extent */
#define FFT_PLANS 6                         /* cuFFT plan pairs kept per stream */
#define FFT_SPECTRA 2                       /* taps spectra kept per stream: the two correlations of a plan */
#define FFT_BX 32
#define FFT_BY 8

struct fft_plan_entry {
    cufftHandle r2c, c2r;
    int made; /* bit 0: r2c created, bit 1: c2r */
    int n, batch;
    size_t work;
    unsigned long long used;
};

/* The fused kernel's twiddle table (ft_twiddles) as a launch parameter. */
struct fft_fused_tw {
    ft_c w[FT_TW];
};

struct fft_spectrum {
    cufftComplex *d_spec; /* fused: FT_SPEC ft_c in the fused kernel's order */
    size_t cap;
    int n, fused, rows, cols;
    unsigned long long used;
    float taps[FILTER_MAX_TAPS];
};

/* A stream's FFT state (struct gstream.fft): plans, taps spectra and the tile buffers, grown to fit
 * and reused; only the stream's job touches it. */
struct gfft {
    struct gctx_owned own; /* first: close_stream frees the state through it */
    struct gconv_ctx *ctx;
    struct fft_plan_entry plan[FFT_PLANS];
    int nplan;
    struct fft_spectrum spec[FFT_SPECTRA];
    float *d_real;
    size_t real_cap;
    cufftComplex *d_cplx;
    size_t cplx_cap;
    void *d_work;
    size_t work_cap;
    unsigned long long tick;
    struct fft_fused_tw tw; /* the fused kernel's twiddle table, made with the state */
};

/* Tiling of one call: tile side n, valid outputs vx x vy per tile, tx x ty tiles per plane. */
struct fft_tiling {
    int n, vx, vy, tx, ty;
    long total; /* tiles of every plane */
    int batch;  /* tiles per cuFFT call */
};

static int ilog2(int n)
{
    int l = 0;
    while ((1 << l) < n)
        l++;
    return l;
}

/* The tile side EDGED_FFT_TILE forces for rows x cols taps (a power of two from FFT_MIN_N that holds
 * them), or 0: the model picks. */
static int fft_forced(int rows, int cols)
{
    const int force = tuning()->fft_tile;
    return force >= FFT_MIN_N && !(force & (force - 1)) && force >= rows && force >= cols ? force : 0;
}

/* The tile side with the least modelled work: tiles * n^2 * (log2(n^2) + FFT_PASS_COST), or the
 * side EDGED_FFT_TILE forces (when it is a power of two from FFT_MIN_N that holds the taps; else
 * the model picks). Small taps prefer small tiles (less overlap is wasted on nothing), 63x63 taps
 * 512 or 1024. A call takes as many tiles as EDGED_FFT_CHUNK_MB of spectra hold. */
static struct fft_tiling fft_tile(int w, int h, int rows, int cols, int planes)
{
    struct fft_tiling t, best;
    double best_cost = 0;
    const int force = fft_forced(rows, cols), chunk_mb = tuning()->fft_chunk_mb;
    const size_t chunk = (size_t)(chunk_mb > 0 ? chunk_mb : 1) << 20;

    memset(&best, 0, sizeof(best));
    for (int n = FFT_MIN_N; n <= FFT_MAX_N; n *= 2) {
        if (n < rows || n < cols || (force && n != force))
            continue;
        t.n = n, t.vx = n - cols + 1, t.vy = n - rows + 1;
        t.tx = div_up(w, t.vx), t.ty = div_up(h, t.vy);
        t.total = (long)t.tx * t.ty * planes;
        double cost = (double)t.total * n * n * (2 * ilog2(n) + FFT_PASS_COST);
        if (best.n == 0 || cost < best_cost)
            best = t, best_cost = cost;
    }
    size_t per = (size_t)best.n * (best.n / 2 + 1) * sizeof(cufftComplex);
    long cap = (long)(chunk / per);
    cap = cap < 1 ? 1 : cap > FFT_MAX_BATCH ? FFT_MAX_BATCH : cap;
    best.batch = (int)(best.total < cap ? best.total : cap);
    return best;
}

/* Samples of tiles [t0, t0 + gridDim.z) under the border rule into d_real (n x n each, dense). */
__global__ void k_fft_gather(const float *__restrict__ d_in, size_t plane_stride, conv_geom g, float *d_real,
                             struct fft_tiling t, long t0)
{
    int x = blockIdx.x * FFT_BX + threadIdx.x, y = blockIdx.y * FFT_BY + threadIdx.y;
    long tile = t0 + blockIdx.z, per = (long)t.tx * t.ty;
    int p = (int)(tile / per), r = (int)(tile % per);
    int sx = (r % t.tx) * t.vx - g.cols / 2 + x, sy = (r / t.tx) * t.vy - g.rows / 2 + y;
    d_real[((size_t)blockIdx.z * t.n + y) * t.n + x] = conv_load(d_in + p * plane_stride, sx, sy, g);
}

/* The taps, zero-padded to n x n, into d_real. */
__global__ void k_fft_taps(const float *__restrict__ d_taps, int rows, int cols, float *d_real, int n)
{
    int x = blockIdx.x * FFT_BX + threadIdx.x, y = blockIdx.y * FFT_BY + threadIdx.y;
    d_real[(size_t)y * n + x] = x < cols && y < rows ? d_taps[y * cols + x] : 0.0f;
}

/* Tile spectra times the conjugate of the taps' spectrum, times scale (1/(n*n)). */
__global__ void k_fft_mul(cufftComplex *d_c, const cufftComplex *__restrict__ d_k, int per_tile, float scale)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= per_tile)
        return;
    cufftComplex *c = d_c + (size_t)blockIdx.y * per_tile + i;
    cufftComplex a = *c, b = d_k[i];
    c->x = (a.x * b.x + a.y * b.y) * scale;
    c->y = (a.y * b.x - a.x * b.y) * scale;
}

/* The valid vx x vy corner of each tile to its place in the output planes (pitch floats). */
__global__ void k_fft_scatter(const float *__restrict__ d_real, float *d_out, size_t plane_stride, int w,
                              int h, int pitch, struct fft_tiling t, long t0)
{
    int x = blockIdx.x * FFT_BX + threadIdx.x, y = blockIdx.y * FFT_BY + threadIdx.y;
    long tile = t0 + blockIdx.z, per = (long)t.tx * t.ty;
    int p = (int)(tile / per), r = (int)(tile % per);
    int ox = (r % t.tx) * t.vx + x, oy = (r / t.tx) * t.vy + y;
    if (x >= t.vx || y >= t.vy || ox >= w || oy >= h)
        return;
    d_out[p * plane_stride + (size_t)oy * pitch + ox] = d_real[((size_t)blockIdx.z * t.n + y) * t.n + x];
}

/* Thread t's samples of phase 1 (ft_row_sample: rows 2j and 2j + 1, columns n2 + 8 i) of the tile
 * whose sample (0, 0) is (x0, y0) of the plane d_in. A tile inside the plane reads them at fixed
 * offsets; one that reaches past an edge takes them under the border rule (border_index, as conv_load,
 * once per row and once per column). */
static __device__ __forceinline__ void fft_fused_gather(ft_c *v, int t, const float *__restrict__ d_in,
                                                        const conv_geom &g, int x0, int y0)
{
    int x, y;

    ft_row_sample(t, 0, &x, &y);
    if (x0 >= 0 && y0 >= 0 && x0 + FT_N <= g.w && y0 + FT_N <= g.h) {
        const float *ra = d_in + (size_t)(y0 + y) * g.pitch + x0 + x, *rb = ra + g.pitch;
#pragma unroll
        for (int i = 0; i < 16; i++)
            v[i].x = __ldg(ra + 8 * i), v[i].y = __ldg(rb + 8 * i);
        return;
    }
    const int ya = border_index(y0 + y, g.h, g.border), yb = border_index(y0 + y + 1, g.h, g.border);
    const float *ra = d_in + (size_t)(ya < 0 ? 0 : ya) * g.pitch, *rb = d_in + (size_t)(yb < 0 ? 0 : yb) * g.pitch;
#pragma unroll
    for (int i = 0; i < 16; i++) {
        int xi = border_index(x0 + x + 8 * i, g.w, g.border);
        v[i].x = xi >= 0 && ya >= 0 ? __ldg(ra + xi) : 0.0f;
        v[i].y = xi >= 0 && yb >= 0 ? __ldg(rb + xi) : 0.0f;
    }
}

/* Thread t's results of phase 7 (rows 2j and 2j + 1, columns m1 + 8 i of the tile) to the plane
 * d_out where they fall inside the tile's valid vx x vy corner, at (ox, oy) of the plane, and inside
 * the plane. */
static __device__ __forceinline__ void fft_fused_put(const ft_c *v, int t, float *d_out, const conv_geom &g,
                                                     int ox, int oy, int vx, int vy)
{
    int x, y;

    ft_row_sample(t, 0, &x, &y);
    const int ex = min(vx, g.w - ox), ey = min(vy, g.h - oy); /* the part inside the plane */
    const bool wa = y < ey, wb = y + 1 < ey;
    float *o = d_out + (size_t)(oy + y) * g.pitch + ox + x;
#pragma unroll
    for (int i = 0; i < 16; i++)
        if (x + 8 * i < ex) {
            if (wa)
                o[8 * i] = v[i].x;
            if (wb)
                o[g.pitch + 8 * i] = v[i].y;
        }
}

/* t, as a value the compiler cannot see through: the phases' slot bases, which depend on the thread
 * alone, are computed again in each phase instead of living in registers (or spilled) through the
 * phases between. */
static __device__ __forceinline__ int fft_opaque(int t)
{
    asm volatile("" : "+r"(t));
    return t;
}

/* The fused path (fft_tile_core.h): one block of FT_THREADS threads per 128 x 128 tile does the
 * gather under the border rule, the forward 2D FFT, the product with the taps' spectrum, the inverse
 * and the write of the valid vx x vy corner, with the tile in shared memory throughout; no cuFFT, no
 * tile buffers in global memory. Tile (blockIdx.x, blockIdx.y) of plane blockIdx.z. BLOCKS: blocks
 * per SM the registers are budgeted for: 2 (the default; FT_SMEM each fits sm_80 and sm_90, 64
 * registers a thread) or 1 (128 registers: fewer warps, more room for the compiler to overlap). */
template <int BLOCKS>
__global__ void __launch_bounds__(FT_THREADS, BLOCKS)
    k_fft_fused(const float *__restrict__ d_in, float *__restrict__ d_out, size_t plane_stride, conv_geom g,
                int vx, int vy, const ft_c *__restrict__ d_spec, const __grid_constant__ struct fft_fused_tw tw)
{
    extern __shared__ ft_c s_buf[];
    ft_c *s_tw = s_buf + FT_SLOTS, v[16];
    const int t = threadIdx.x;

    if (t < FT_TW)
        s_tw[t] = tw.w[t];
    fft_fused_gather(v, t, d_in + blockIdx.z * plane_stride, g, blockIdx.x * vx - g.cols / 2,
                     blockIdx.y * vy - g.rows / 2);
    __syncthreads();
    ft_row_fwd1(fft_opaque(t), v, s_buf, s_tw);
    __syncthreads();
    ft_row_fwd2(fft_opaque(t), s_buf);
    __syncthreads();
    ft_col_fwd1(fft_opaque(t), s_buf, s_tw);
    __syncthreads();
    ft_col_mid(fft_opaque(t), s_buf, s_tw, d_spec);
    __syncthreads();
    ft_col_inv2(fft_opaque(t), s_buf);
    __syncthreads();
    if (ft_row_needed(t, vy)) /* whole warps of rows past the valid corner skip the row inverse */
        ft_row_inv1(fft_opaque(t), s_buf, s_tw);
    __syncthreads();
    if (!ft_row_needed(t, vy))
        return;
    ft_row_inv2(fft_opaque(t), s_buf, v);
    fft_fused_put(v, t, d_out + blockIdx.z * plane_stride, g, blockIdx.x * vx, blockIdx.y * vy, vx, vy);
}

/* The taps' spectrum for the fused kernel (ft_spec_value, summed in double), one value a thread. */
#define FFT_SPEC_BLOCK 64
__global__ void k_fft_fused_spec(const float *__restrict__ d_taps, int rows, int cols, ft_c *d_spec)
{
    __shared__ double s_cs[2 * FT_N];
    int e = blockIdx.x * FFT_SPEC_BLOCK + threadIdx.x;

    for (int m = threadIdx.x; m < FT_N; m += FFT_SPEC_BLOCK)
        sincospi(2.0 * m / FT_N, &s_cs[2 * m + 1], &s_cs[2 * m]);
    __syncthreads();
    if (e < FT_SPEC)
        d_spec[e] = ft_spec_value(d_taps, rows, cols, e, s_cs);
}

/* Whether this call takes the fused kernel: EDGED_FFT_FUSED on, no other tile side forced, and the
 * block's shared memory within the device's opt-in limit (else the cuFFT path serves). */
static bool fft_fused_applies(const struct conv_args *a)
{
    int force = fft_forced(a->k->rows, a->k->cols);

    return tuning()->fft_fused && (force == 0 || force == FT_N) && a->k->rows <= FT_N && a->k->cols <= FT_N &&
           FT_SMEM <= a->lim->smem_optin;
}

/* A cuFFT failure as this launcher reports it: allocation failures as CUDA's (EDGED_E_GPU_OOM via
 * gctx_fail), others as EDGED_E_INTERNAL naming the call. */
static int fft_fail(struct conv_args *a, cufftResult r, const char *what, char *err)
{
    if (r == CUFFT_ALLOC_FAILED) {
        a->cuerr = cudaErrorMemoryAllocation, a->cuwhat = what;
        return GCONV_CUDA_FAILED;
    }
    return edged_fail(err, EDGED_E_INTERNAL, "fft: %s failed (cufftResult %d)", what, (int)r);
}

/* Grows one of f's device buffers; the stream's earlier kernels may still read the old one. */
static cudaError_t fft_grow(struct gfft *f, cudaStream_t s, void **p, size_t *cap, size_t need)
{
    cudaError_t e;

    if (need <= *cap)
        return cudaSuccess;
    if ((e = cudaStreamSynchronize(s)) != cudaSuccess)
        return e;
    return gctx_grow_device(f->ctx, NULL, p, cap, need);
}

static void fft_plan_destroy(struct fft_plan_entry *pe)
{
    if (pe->made & 1)
        cufftDestroy(pe->r2c);
    if (pe->made & 2)
        cufftDestroy(pe->c2r);
    memset(pe, 0, sizeof(*pe));
}

static cufftResult fft_plan_make(struct fft_plan_entry *pe, int n, int batch)
{
    int dims[2] = {n, n};
    size_t w1 = 0, w2 = 0;
    cufftResult r;

    memset(pe, 0, sizeof(*pe));
    if ((r = cufftCreate(&pe->r2c)) == CUFFT_SUCCESS)
        pe->made |= 1;
    if (r == CUFFT_SUCCESS && (r = cufftCreate(&pe->c2r)) == CUFFT_SUCCESS)
        pe->made |= 2;
    if (r != CUFFT_SUCCESS || (r = cufftSetAutoAllocation(pe->r2c, 0)) != CUFFT_SUCCESS ||
        (r = cufftSetAutoAllocation(pe->c2r, 0)) != CUFFT_SUCCESS ||
        (r = cufftMakePlanMany(pe->r2c, 2, dims, NULL, 1, 0, NULL, 1, 0, CUFFT_R2C, batch, &w1)) !=
            CUFFT_SUCCESS ||
        (r = cufftMakePlanMany(pe->c2r, 2, dims, NULL, 1, 0, NULL, 1, 0, CUFFT_C2R, batch, &w2)) !=
            CUFFT_SUCCESS) {
        fft_plan_destroy(pe);
        return r;
    }
    pe->n = n, pe->batch = batch, pe->work = w1 > w2 ? w1 : w2;
    return CUFFT_SUCCESS;
}

/* The plan pair for (n, batch), made on first use; the least recently used pair goes when the
 * cache is full (after the stream drained: its last calls may still run). */
static int fft_plan_get(struct conv_args *a, struct gfft *f, int n, int batch, struct fft_plan_entry **out,
                        char *err)
{
    struct fft_plan_entry *pe = NULL;
    cufftResult r;
    cudaError_t e;

    for (int i = 0; i < f->nplan && !pe; i++)
        if (f->plan[i].n == n && f->plan[i].batch == batch)
            pe = &f->plan[i];
    if (!pe) {
        if (f->nplan < FFT_PLANS) {
            pe = &f->plan[f->nplan++];
        } else {
            pe = &f->plan[0];
            for (int i = 1; i < FFT_PLANS; i++)
                if (f->plan[i].used < pe->used)
                    pe = &f->plan[i];
            if ((e = cudaStreamSynchronize(a->stream)) != cudaSuccess) {
                a->cuerr = e, a->cuwhat = "fft: cudaStreamSynchronize";
                return GCONV_CUDA_FAILED;
            }
            fft_plan_destroy(pe);
        }
        if ((r = fft_plan_make(pe, n, batch)) != CUFFT_SUCCESS) /* pe stays empty: n 0 matches nothing */
            return fft_fail(a, r, "cufftMakePlanMany", err);
    }
    if ((e = fft_grow(f, a->stream, &f->d_work, &f->work_cap, pe->work)) != cudaSuccess) {
        a->cuerr = e, a->cuwhat = "fft: workspace";
        return GCONV_CUDA_FAILED;
    }
    pe->used = ++f->tick;
    *out = pe;
    return 0;
}

static cufftResult fft_exec(struct fft_plan_entry *pe, struct gfft *f, cudaStream_t s, int forward)
{
    cufftHandle h = forward ? pe->r2c : pe->c2r;
    cufftResult r;

    if ((r = cufftSetStream(h, s)) != CUFFT_SUCCESS || (r = cufftSetWorkArea(h, f->d_work)) != CUFFT_SUCCESS)
        return r;
    return forward ? cufftExecR2C(h, f->d_real, f->d_cplx) : cufftExecC2R(h, f->d_cplx, f->d_real);
}

/* cuFFT's spectrum of a's taps zero-padded to n x n into d_spec, on a's stream. */
static int fft_spectrum_cufft(struct conv_args *a, struct gfft *f, int n, cufftComplex *d_spec, char *err)
{
    size_t bytes = (size_t)n * (n / 2 + 1) * sizeof(cufftComplex);
    struct fft_plan_entry *pe;
    cudaError_t e;
    cufftResult r;
    int rc;

    if ((rc = fft_plan_get(a, f, n, 1, &pe, err)) < 0)
        return rc;
    if ((e = fft_grow(f, a->stream, (void **)&f->d_real, &f->real_cap, sizeof(float) * n * n)) != cudaSuccess ||
        (e = fft_grow(f, a->stream, (void **)&f->d_cplx, &f->cplx_cap, bytes)) != cudaSuccess) {
        a->cuerr = e, a->cuwhat = "fft: spectrum buffers";
        return GCONV_CUDA_FAILED;
    }
    dim3 block(FFT_BX, FFT_BY), grid(n / FFT_BX, n / FFT_BY);
    k_fft_taps<<<grid, block, 0, a->stream>>>(a->d_taps, a->k->rows, a->k->cols, f->d_real, n);
    if ((rc = conv_launched(a, "fft taps kernel")) < 0)
        return rc;
    if ((r = fft_exec(pe, f, a->stream, 1)) != CUFFT_SUCCESS)
        return fft_fail(a, r, "cufftExecR2C (taps)", err);
    if ((e = cudaMemcpyAsync(d_spec, f->d_cplx, bytes, cudaMemcpyDeviceToDevice, a->stream)) != cudaSuccess) {
        a->cuerr = e, a->cuwhat = "fft: spectrum copy";
        return GCONV_CUDA_FAILED;
    }
    return 0;
}

/* The spectrum of a's taps for tiles of side n: cuFFT's of the taps padded to n x n, or with fused
 * the fused kernel's (n = FT_N: the same size, in its own order and scale). Kept from an earlier
 * call with the same taps, n and kind, else computed on a's stream (into the least recently used
 * slot) from a->d_taps. */
static int fft_spectrum_get(struct conv_args *a, struct gfft *f, int n, int fused, const cufftComplex **out,
                            char *err)
{
    const struct kernel2d *k = a->k;
    size_t ntaps = (size_t)k->rows * k->cols, bytes = (size_t)n * (n / 2 + 1) * sizeof(cufftComplex);
    struct fft_spectrum *sp = &f->spec[0];
    cudaError_t e;
    int rc;

    for (int i = 0; i < FFT_SPECTRA; i++) {
        struct fft_spectrum *c = &f->spec[i];
        if (c->n == n && c->fused == fused && c->rows == k->rows && c->cols == k->cols &&
            !memcmp(c->taps, k->taps, ntaps * sizeof(float))) {
            c->used = ++f->tick;
            *out = c->d_spec;
            return 0;
        }
        if (c->used < sp->used)
            sp = c;
    }
    sp->n = 0; /* invalid until recomputed */
    if ((e = fft_grow(f, a->stream, (void **)&sp->d_spec, &sp->cap, bytes)) != cudaSuccess) {
        a->cuerr = e, a->cuwhat = "fft: spectrum buffer";
        return GCONV_CUDA_FAILED;
    }
    if (fused) {
        k_fft_fused_spec<<<div_up(FT_SPEC, FFT_SPEC_BLOCK), FFT_SPEC_BLOCK, 0, a->stream>>>(
            a->d_taps, k->rows, k->cols, (ft_c *)sp->d_spec);
        rc = conv_launched(a, "fft fused spectrum kernel");
    } else {
        rc = fft_spectrum_cufft(a, f, n, sp->d_spec, err);
    }
    if (rc < 0)
        return rc;
    sp->n = n, sp->fused = fused, sp->rows = k->rows, sp->cols = k->cols, sp->used = ++f->tick;
    memcpy(sp->taps, k->taps, ntaps * sizeof(float));
    *out = sp->d_spec;
    return 0;
}

/* One chunk of tiles [t0, t0 + count): gather, R2C, multiply, C2R, scatter. */
static int fft_chunk(struct conv_args *a, struct gfft *f, const struct fft_tiling *t,
                     const cufftComplex *d_spec, long t0, int count, size_t plane_stride, char *err)
{
    struct fft_plan_entry *pe;
    conv_geom g = conv_geom_of(a);
    int per = t->n * (t->n / 2 + 1), rc;
    cufftResult r;

    if ((rc = fft_plan_get(a, f, t->n, count, &pe, err)) < 0)
        return rc;
    dim3 block(FFT_BX, FFT_BY), tiles(t->n / FFT_BX, t->n / FFT_BY, count);
    k_fft_gather<<<tiles, block, 0, a->stream>>>(a->d_in, plane_stride, g, f->d_real, *t, t0);
    if ((rc = conv_launched(a, "fft gather kernel")) < 0)
        return rc;
    if ((r = fft_exec(pe, f, a->stream, 1)) != CUFFT_SUCCESS)
        return fft_fail(a, r, "cufftExecR2C", err);
    k_fft_mul<<<dim3(div_up(per, 256), count), 256, 0, a->stream>>>(f->d_cplx, d_spec, per,
                                                                    1.0f / ((float)t->n * t->n));
    if ((rc = conv_launched(a, "fft multiply kernel")) < 0)
        return rc;
    if ((r = fft_exec(pe, f, a->stream, 0)) != CUFFT_SUCCESS)
        return fft_fail(a, r, "cufftExecC2R", err);
    dim3 valid(div_up(t->vx, FFT_BX), div_up(t->vy, FFT_BY), count);
    k_fft_scatter<<<valid, block, 0, a->stream>>>(f->d_real, a->d_out, plane_stride, a->w, a->h, a->pitch, *t,
                                                  t0);
    return conv_launched(a, "fft scatter kernel");
}

static void gfft_free(void *self)
{
    struct gfft *f = (struct gfft *)self;

    if (!f)
        return;
    for (int i = 0; i < f->nplan; i++)
        fft_plan_destroy(&f->plan[i]);
    for (int i = 0; i < FFT_SPECTRA; i++)
        gctx_free_device(f->ctx, f->spec[i].d_spec, f->spec[i].cap);
    gctx_free_device(f->ctx, f->d_real, f->real_cap);
    gctx_free_device(f->ctx, f->d_cplx, f->cplx_cap);
    gctx_free_device(f->ctx, f->d_work, f->work_cap);
    free(f);
}

/* The fused path: every tile of every plane in one launch of k_fft_fused (EDGED_FFT_FUSED 2: the
 * instance budgeted for one block per SM). */
static int fft_fused_run(struct conv_args *a, struct gfft *f, int planes, char *err)
{
    static unsigned long long attr_done[2]; /* per kernel and device: the shared-memory limit raised */
    const int vx = FT_N - a->k->cols + 1, vy = FT_N - a->k->rows + 1, one = tuning()->fft_fused == 2;
    void (*kernel)(const float *, float *, size_t, conv_geom, int, int, const ft_c *, const struct fft_fused_tw) =
        one ? k_fft_fused<1> : k_fft_fused<2>;
    const cufftComplex *d_spec = NULL;
    cudaError_t e;
    int rc;

    if ((rc = fft_spectrum_get(a, f, FT_N, 1, &d_spec, err)) < 0)
        return rc;
    if ((e = fast_smem_attr(kernel, a, FT_SMEM, &attr_done[one])) != cudaSuccess) {
        a->cuerr = e, a->cuwhat = "fft: fused kernel shared-memory limit";
        return GCONV_CUDA_FAILED;
    }
    dim3 grid(div_up(a->w, vx), div_up(a->h, vy), planes);
    kernel<<<grid, FT_THREADS, FT_SMEM, a->stream>>>(a->d_in, a->d_out, planes > 1 ? a->plane_stride : 0,
                                                     conv_geom_of(a), vx, vy, (const ft_c *)d_spec, f->tw);
    return conv_launched(a, "fft fused kernel");
}

/* Limits: none beyond the image's (any odd taps up to 63x63, any border, any size from 1x1). The
 * block argument is not used. a->planes planes (a->plane_stride floats apart) go through in one
 * batch of tiles. */
extern "C" int conv_fft(struct conv_args *a, char *err)
{
    int planes = a->planes > 1 ? a->planes : 1;
    struct fft_tiling t = fft_tile(a->w, a->h, a->k->rows, a->k->cols, planes);
    size_t cbytes = (size_t)t.batch * t.n * (t.n / 2 + 1) * sizeof(cufftComplex);
    const cufftComplex *d_spec = NULL;
    struct gfft *f;
    cudaError_t e;
    int rc;

    if ((a->k->cols & 1) == 0 || (a->k->rows & 1) == 0)
        return edged_fail(err, EDGED_E_PARAM, "fft: kernel sides must be odd");
    if (a->check_only)
        return 0;
    if (!a->fft || !a->ctx)
        return edged_fail(err, EDGED_E_INTERNAL, "fft: no stream state given");
    if (!*a->fft) {
        if (!(*a->fft = (struct gfft *)calloc(1, sizeof(struct gfft))))
            return edged_fail(err, EDGED_E_NOMEM, "fft: out of memory for the stream state");
        (*a->fft)->ctx = a->ctx;
        (*a->fft)->own.release = gfft_free;
        ft_twiddles((*a->fft)->tw.w);
    }
    f = *a->fft;
    if (fft_fused_applies(a))
        return fft_fused_run(a, f, planes, err);
    if ((rc = fft_spectrum_get(a, f, t.n, 0, &d_spec, err)) < 0)
        return rc;
    if ((e = fft_grow(f, a->stream, (void **)&f->d_real, &f->real_cap,
                      sizeof(float) * t.batch * t.n * t.n)) != cudaSuccess ||
        (e = fft_grow(f, a->stream, (void **)&f->d_cplx, &f->cplx_cap, cbytes)) != cudaSuccess) {
        a->cuerr = e, a->cuwhat = "fft: tile buffers";
        return GCONV_CUDA_FAILED;
    }
    for (long t0 = 0; t0 < t.total; t0 += t.batch) {
        int count = (int)(t.total - t0 < t.batch ? t.total - t0 : t.batch);
        if ((rc = fft_chunk(a, f, &t, d_spec, t0, count, planes > 1 ? a->plane_stride : 0, err)) < 0)
            return rc;
    }
    return 0;
}

#else /* built without cuFFT: no stream ever holds fft state */

extern "C" int conv_fft(struct conv_args *a, char *err)
{
    (void)a;
    return edged_fail(err, EDGED_E_NO_CUDA,
                      "variant fft unavailable: built without cuFFT (libcufft not found)");
}

#endif
