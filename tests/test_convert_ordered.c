/* SPDX-License-Identifier: BSD-2-Clause */
/* test_convert_ordered.c - converters/ordered.c: inputs decoded on several
 * threads are emitted in input order, each once, from the slot its decode
 * filled; decoding goes on while an input is being emitted; a failed emit
 * stops the run. */
#include "ordered.h"
#include "testutil.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAXN 200

typedef struct slot {
    uint64_t input; /* what the decode wrote */
    uint64_t check;
} slot;

typedef struct run {
    slot *slots;
    int nslots;
    atomic_int decoded[MAXN];
    atomic_int ndecoded;
    uint64_t nemitted;
    int order_ok, slot_ok;
    uint64_t fail_at;       /* emit of this input returns 1 (MAXN: never) */
    int wait_for;           /* emit of input 0 waits until this many inputs are decoded */
    int waited_ok;          /* ... and they were, within the time limit */
    atomic_uint_fast64_t t; /* a little random work per decode */
} run;

static void sleep_us(long us) {
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

static void decode(void *ctx, void *sl, uint64_t i) {
    run *r = ctx;
    slot *s = sl;
    uint64_t x = atomic_fetch_add(&r->t, 0x9e3779b97f4a7c15ull);
    sleep_us((long)((x >> 40) % 300)); /* decodes finish out of order */
    s->input = i;
    s->check = i * 31 + 7;
    atomic_fetch_add(&r->decoded[i], 1);
    atomic_fetch_add(&r->ndecoded, 1);
}

static int emit(void *ctx, void *sl, uint64_t i) {
    run *r = ctx;
    slot *s = sl;
    if (i != r->nemitted) r->order_ok = 0;
    if (s->input != i || s->check != i * 31 + 7) r->order_ok = 0;
    if (s != &r->slots[i % (uint64_t)r->nslots]) r->slot_ok = 0;
    r->nemitted++;
    if (i == 0 && r->wait_for) {
        /* the decoders must go on while this emit runs (a commit, a flush) */
        for (int k = 0; k < 5000 && atomic_load(&r->ndecoded) < r->wait_for; k++) sleep_us(1000);
        r->waited_ok = atomic_load(&r->ndecoded) >= r->wait_for;
    }
    return i == r->fail_at;
}

static run *new_run(int nthreads) {
    run *r = calloc(1, sizeof *r);
    CHECK(r != NULL);
    r->nslots = ss__conv_ordered_slots(nthreads);
    r->slots = calloc((size_t)r->nslots, sizeof *r->slots);
    CHECK(r->slots != NULL);
    r->order_ok = r->slot_ok = 1;
    r->fail_at = MAXN;
    return r;
}

static void free_run(run *r) {
    free(r->slots);
    free(r);
}

/* Every input decoded once and emitted once, in order, from its slot. */
static void test_order(void) {
    static const uint64_t ns[] = {0, 1, 2, 3, 7, MAXN};
    for (int t = 1; t <= 4; t++)
        for (size_t k = 0; k < sizeof ns / sizeof *ns; k++) {
            run *r = new_run(t);
            CHECK_EQ_U64(
                ss__conv_parallel_ordered(r, r->slots, sizeof(slot), t, ns[k], decode, emit), 0);
            CHECK(r->order_ok && r->slot_ok);
            CHECK_EQ_U64(r->nemitted, ns[k]);
            for (uint64_t i = 0; i < ns[k]; i++) CHECK_EQ_U64(atomic_load(&r->decoded[i]), 1);
            free_run(r);
        }
}

/* While input 0 is being emitted, every decoder goes on with the next input
 * (before, a thread's decoded input waited for the emit of the one before,
 * and with one thread decode and emit took turns). */
static void test_overlap(void) {
    for (int t = 1; t <= 3; t++) {
        run *r = new_run(t);
        r->wait_for = t + 1; /* input 0 and one more per decoder */
        CHECK_EQ_U64(ss__conv_parallel_ordered(r, r->slots, sizeof(slot), t, 20, decode, emit), 0);
        CHECK(r->waited_ok);
        CHECK(r->order_ok && r->slot_ok);
        CHECK_EQ_U64(r->nemitted, 20);
        free_run(r);
    }
}

/* An emit that fails stops the run: nothing after it is emitted, and no
 * input is handed out beyond the slots that were free. */
static void test_stop(void) {
    for (int t = 1; t <= 4; t++) {
        run *r = new_run(t);
        r->fail_at = 5;
        CHECK_EQ_U64(ss__conv_parallel_ordered(r, r->slots, sizeof(slot), t, MAXN, decode, emit),
                     1);
        CHECK_EQ_U64(r->nemitted, 6);
        CHECK(r->order_ok);
        for (uint64_t i = 5 + (uint64_t)r->nslots; i < MAXN; i++)
            CHECK_EQ_U64(atomic_load(&r->decoded[i]), 0);
        free_run(r);
    }
    run *r = new_run(1); /* the serial form stops too */
    r->fail_at = 2;
    CHECK_EQ_U64(ss__conv_serial_ordered(r, r->slots, 10, decode, emit), 1);
    CHECK_EQ_U64(r->nemitted, 3);
    CHECK_EQ_U64(atomic_load(&r->ndecoded), 3);
    free_run(r);
}

int main(void) {
    test_order();
    test_overlap();
    test_stop();
    return 0;
}
