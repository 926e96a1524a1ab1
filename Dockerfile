# Dockerfile — edged as a container: the GPU image (default) on the CUDA base image, and a CPU-only image without CUDA.
#
#   docker build -t edged:0.1.0 .                             # GPU image (the last stage, gpu)
#   docker build --target cpu -t edged:0.1.0-cpu .            # CPU-only image on debian:12-slim
#   docker run --rm --gpus all -p 8080:8080 edged:0.1.0       # GPU (NVIDIA Container Toolkit)
#   docker run --rm -p 8080:8080 edged:0.1.0-cpu              # no GPU, no CUDA in the image
#
# Build args: CUDA_VERSION (the nvidia/cuda tag, default 13.0.0; the host driver must support it:
# R580 or newer for CUDA 13), CUDA_ARCHS (nvcc -gencode flags; empty = the Makefile's default,
# sm_80 + sm_90 + compute_90 PTX) and CPU_BASE (the CPU image's base, default debian:12-slim), e.g.
#   docker build --build-arg CUDA_ARCHS="-gencode arch=compute_90,code=sm_90" -t edged:0.1.0 .
# The version in the tags is the one in server/ops/version.h.
# Packages come from docker/deps.sh (the one list, also used by `make deps`); this file has none.
# Configuration is only through EDGED_* environment variables (docs/configuration.md).
# Both images run as uid/gid 10001 (docker/runtime_user.sh), which docker/k8s/base/deployment.yaml names.
# HEALTHCHECK is liveness (`edged health --live`, /healthz), never readiness: an overloaded,
# draining or GPU-less container is not a hung one. It asks the probe listener on 9090
# (EDGED_METRICS_LISTEN: /metrics, /healthz and /readyz on connections no API client can take);
# the API is on 8080 (docs/deployment.md).

ARG CUDA_VERSION=13.0.0
ARG CPU_BASE=debian:12-slim

# ---- build-cpu: gcc and the -dev packages, no CUDA ---------------------------------------------
FROM ${CPU_BASE} AS build-cpu
WORKDIR /src
COPY docker/deps.sh docker/deps.sh
RUN sh docker/deps.sh build
COPY . .
RUN make -j"$(nproc)" GPU=0 DESTDIR=/stage PREFIX=/usr/local install

# ---- cpu: the CPU-only image (docker build --target cpu) ----------------------------------------
FROM ${CPU_BASE} AS cpu
COPY docker/deps.sh docker/runtime_user.sh /tmp/
RUN sh /tmp/deps.sh runtime && sh /tmp/runtime_user.sh \
    && rm -rf /var/lib/apt/lists/* /tmp/deps.sh /tmp/runtime_user.sh
COPY --from=build-cpu /stage/ /
USER 10001:10001
ENV EDGED_PORT=8080 \
    EDGED_METRICS_LISTEN=0.0.0.0:9090 \
    EDGED_BACKEND=cpu \
    EDGED_OPENAPI=/usr/local/share/edged/openapi.yaml
EXPOSE 8080 9090
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 CMD ["edged", "health", "--live"]
ENTRYPOINT ["edged", "serve"]

# ---- build: nvcc, gcc and the -dev packages --------------------------------------------------
FROM nvidia/cuda:${CUDA_VERSION}-devel-ubuntu24.04 AS build
ARG CUDA_ARCHS=""
WORKDIR /src
# Dependencies first so that this layer is cached across source changes.
COPY docker/deps.sh docker/deps.sh
RUN sh docker/deps.sh build
COPY . .
# NPP=0: the runtime image has no NPP libraries. The CUDA runtime is linked statically, so the
# binary needs libcuda.so.1, which the NVIDIA Container Toolkit mounts from the host driver, and
# libcufft.so.12 (variant fft; FFT=auto finds it in the devel image), copied into the gpu stage.
# make install puts the binary, its man page, the docs and openapi.yaml under /stage/usr/local;
# the web page is inside the binary.
RUN make -j"$(nproc)" GPU=1 NPP=0 ${CUDA_ARCHS:+CUDA_ARCHS="$CUDA_ARCHS"} DESTDIR=/stage PREFIX=/usr/local install

# ---- gpu: shared libraries from deps.sh, the installed files (the default image) ----------------
FROM nvidia/cuda:${CUDA_VERSION}-base-ubuntu24.04 AS gpu
COPY docker/deps.sh docker/runtime_user.sh /tmp/
RUN sh /tmp/deps.sh runtime && sh /tmp/runtime_user.sh \
    && rm -rf /var/lib/apt/lists/* /tmp/deps.sh /tmp/runtime_user.sh
COPY --from=build /stage/ /
# cuFFT from the toolkit the binary was built with (the file, not its symlinks), found through
# the loader cache: /usr/local/lib is in the default search list.
COPY --from=build /usr/local/cuda/lib64/libcufft.so.12 /usr/local/lib/libcufft.so.12
RUN ldconfig
USER 10001:10001
# The CUDA JIT cache goes to /tmp: with a read-only root filesystem, mount a tmpfs or an
# emptyDir there.
ENV EDGED_PORT=8080 \
    EDGED_METRICS_LISTEN=0.0.0.0:9090 \
    EDGED_OPENAPI=/usr/local/share/edged/openapi.yaml \
    CUDA_CACHE_PATH=/tmp/.nv/ComputeCache
EXPOSE 8080 9090
# SIGTERM drains: readiness 503, stop accepting, answer every queued job, exit 0 (within
# EDGED_DRAIN_TIMEOUT_S; give `docker stop -t` more than that).
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 CMD ["edged", "health", "--live"]
ENTRYPOINT ["edged", "serve"]
