/* bench_codec.h — `edged bench --codec`: decode and encode times per input format (PNG: edged's codec
 * against libpng; JPEG: libjpeg-turbo; WebP: libwebp). */
#ifndef EDGED_BENCH_CODEC_H
#define EDGED_BENCH_CODEC_H

/* Runs the codec benchmark: argv[0] is the command name, an optional "--codec" follows, then
 * [--json] [--reps N] [--level L] [--quality Q] FILE... For each file: the median decode and
 * encode ms of each codec of its sniffed format, measured in the same run after a warm-up, and the
 * encoded bytes;
 * a table, or with --json one object per line (file, codec, decode_ms, encode_ms, bytes).
 * Returns an exit code (EXIT_OK, EXIT_USAGE, EXIT_BAD_INPUT). */
int bench_codec_main(int argc, char **argv);

#endif
