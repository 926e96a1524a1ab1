/* budget.h — the memory budget: bytes that requests reserve before they allocate (body buffers,
 * decoded images, float planes, output), waited for briefly and refused when spent. */
#ifndef EDGED_BUDGET_H
#define EDGED_BUDGET_H

#include <stddef.h>

struct budget;

/* A budget of limit bytes (0: unlimited, reservations only counted). Returns 0 or EDGED_E_NOMEM. */
int budget_new(struct budget **out, size_t limit, char *err);
/* Frees b; accepts NULL. Every reservation should have been given back. */
void budget_free(struct budget *b);

/* Reserves n bytes, waiting up to wait_ms for others to give back. Returns 0, or
 * EDGED_E_MEMORY_BUDGET (spent: retry later) or EDGED_E_IMAGE_TOO_LARGE (n alone exceeds the
 * whole budget: never fits) with a message. A NULL budget grants everything. */
int budget_take(struct budget *b, size_t n, int wait_ms, char *err);
/* As budget_take, but waits until `room` bytes (at least n) are free and takes n of them: a request
 * admitted with the bytes of its first stage, when those of its largest stage fit now. */
int budget_take_room(struct budget *b, size_t n, size_t room, int wait_ms, char *err);
/* Gives back n bytes taken before; accepts NULL and 0. */
void budget_give(struct budget *b, size_t n);

/* Bytes reserved now, and the limit. */
size_t budget_used(struct budget *b);
size_t budget_limit(const struct budget *b);

/* The default budget: half of the cgroup's memory limit (v2 memory.max, v1
 * memory.limit_in_bytes), else half of the machine's memory; at least 256 MiB. */
size_t budget_default_bytes(void);

#endif
