/* fair_slots.h — n slots handed out in the order they were asked for. A POSIX semaphore wakes its
 * waiters in no set order, so under load one waiter can be passed over again and again while
 * later ones get in: its wait, and the tail latency of its request, has no bound. Here a slot
 * that is given back goes to the oldest waiter, and a newcomer never takes it first. */
#ifndef EDGED_FAIR_SLOTS_H
#define EDGED_FAIR_SLOTS_H

#include <pthread.h>

struct fair_waiter;

struct fair_slots {
    pthread_mutex_t mu;
    int free;                        /* slots nobody holds; 0 while anyone waits */
    struct fair_waiter *head, *tail; /* the waiters, oldest first */
};

/* n >= 1 slots, all free. 0, or -1 when the mutex cannot be made. */
int fair_slots_init(struct fair_slots *f, int n);
/* Only when nobody holds or waits for a slot. */
void fair_slots_destroy(struct fair_slots *f);
/* Takes a slot, waiting behind everyone who asked before. */
void fair_slots_enter(struct fair_slots *f);
/* Gives a slot back: to the oldest waiter, if any. */
void fair_slots_leave(struct fair_slots *f);
/* Threads waiting now. */
int fair_slots_waiting(struct fair_slots *f);

#endif
