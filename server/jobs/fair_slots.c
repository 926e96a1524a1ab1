/* fair_slots.c — FIFO slots: a mutex, a count of free slots and a queue of waiters, each waiting on
 * a condition variable of its own, so that giving a slot back wakes exactly the thread that gets it. */
#include "jobs/fair_slots.h"

struct fair_waiter {
    pthread_cond_t cv;
    int granted;
    struct fair_waiter *next;
};

int fair_slots_init(struct fair_slots *f, int n)
{
    f->free = n > 0 ? n : 1;
    f->head = f->tail = NULL;
    return pthread_mutex_init(&f->mu, NULL) == 0 ? 0 : -1;
}

void fair_slots_destroy(struct fair_slots *f) { pthread_mutex_destroy(&f->mu); }

void fair_slots_enter(struct fair_slots *f)
{
    struct fair_waiter w = {.granted = 0, .next = NULL};

    pthread_mutex_lock(&f->mu);
    if (f->free > 0) { /* free implies nobody waits: leave hands slots to waiters first */
        f->free--;
        pthread_mutex_unlock(&f->mu);
        return;
    }
    pthread_cond_init(&w.cv, NULL);
    if (f->tail)
        f->tail->next = &w;
    else
        f->head = &w;
    f->tail = &w;
    while (!w.granted)
        pthread_cond_wait(&w.cv, &f->mu);
    pthread_mutex_unlock(&f->mu);
    pthread_cond_destroy(&w.cv);
}

void fair_slots_leave(struct fair_slots *f)
{
    struct fair_waiter *w;

    pthread_mutex_lock(&f->mu);
    if ((w = f->head)) {
        f->head = w->next;
        if (!f->head)
            f->tail = NULL;
        w->granted = 1;
        pthread_cond_signal(&w->cv);
    } else {
        f->free++;
    }
    pthread_mutex_unlock(&f->mu);
}

int fair_slots_waiting(struct fair_slots *f)
{
    int n = 0;

    pthread_mutex_lock(&f->mu);
    for (const struct fair_waiter *w = f->head; w; w = w->next)
        n++;
    pthread_mutex_unlock(&f->mu);
    return n;
}
