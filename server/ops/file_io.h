/* file_io.h — whole files into memory: the input images of the CLI and the bench, and the
 * --openapi file of the service. */
#ifndef EDGED_FILE_IO_H
#define EDGED_FILE_IO_H

#include <stddef.h>
#include <stdint.h>

/* Reads all of path ("-": standard input; pipes work as files do) into a malloc'd buffer (*out,
 * *len; the caller frees). Returns 0, EDGED_E_IO (cannot open or read; err names the file and the
 * reason), EDGED_E_IMAGE_TOO_LARGE (more than max bytes) or EDGED_E_NOMEM. */
int fileio_read(const char *path, size_t max, uint8_t **out, size_t *len, char *err);

#endif
