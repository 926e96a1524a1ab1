#!/bin/sh
# build.sh — builds the libFuzzer targets (clang, -fsanitize=fuzzer,address,undefined) into
# $OUT (default build-fuzz): fuzz_png, fuzz_png_diff, fuzz_image, fuzz_request, fuzz_params,
# fuzz_inflate_spec, fuzz_deflate_chunks. Usage: sh tests/fuzz/build.sh [OUT]
set -eu
cd "$(dirname "$0")/../.."
OUT=${1:-${OUT:-build-fuzz}}
CLANG=${CLANG:-clang}
PKGS="libpng libcjson zlib libdeflate libturbojpeg libjpeg libwebp"
CFLAGS="-std=c11 -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
 -Wall -Wextra -Wshadow -Wstrict-prototypes -D_DEFAULT_SOURCE -DEDGED_GPU=0 -Iapi -Iserver -Icpu_ref -Igpu \
 $(pkg-config --cflags $PKGS)"
LIBS="$(pkg-config --libs $PKGS) -lm"
API="api/errors.c api/filter.c api/image.c api/params.c api/params_field.c api/params_parse.c api/utf8.c api/variant.c"
mkdir -p "$OUT"
build() { # NAME SOURCES...
    name=$1
    shift
    echo "  CC $OUT/$name"
    # shellcheck disable=SC2086
    $CLANG $CFLAGS -o "$OUT/$name" "tests/fuzz/$name.c" "$@" $LIBS
}
PNG="server/codec/png_io.c server/codec/png_decode.c server/codec/png_unfilter.c server/codec/png_encode.c \
 cpu_ref/png_frame.c cpu_ref/deflate_chunks.c \
 api/errors.c api/image.c"
# shellcheck disable=SC2086
build fuzz_png $PNG
# shellcheck disable=SC2086
build fuzz_png_diff $PNG
# shellcheck disable=SC2086
build fuzz_image server/codec/image_io.c server/codec/jpeg_io.c server/codec/webp_io.c server/codec/exif.c $PNG
build fuzz_params $API
build fuzz_inflate_spec cpu_ref/inflate_spec.c cpu_ref/inflate_seg.c api/errors.c
build fuzz_request server/http/upload.c server/http/multipart.c $API
build fuzz_deflate_chunks cpu_ref/deflate_host.c cpu_ref/deflate_chunks.c api/errors.c api/image.c
