/* SPDX-License-Identifier: BSD-2-Clause */
/* rnn_bptt.c - truncated BPTT with the window reader and hidden-state carry.
 *
 * A small Elman RNN in plain C learns, from EEG-like signals, which of two
 * classes a recording belongs to, at every sample. The class shows only in
 * short bursts every PERIOD samples, much further apart than one window, so
 * a model must carry what it saw from window to window: with the reader's
 * hidden-state carry the loss falls well below what the same model reaches
 * with SS_WINDOW_FORGET_STATE (a fresh state every window).
 *
 *   rnn_bptt [--epochs N] [--dir DIR] [--check]
 *
 * The store is written by the example itself (digital i16 samples with a
 * per-channel gain, as converted from EDF); the reader converts them to
 * physical f32 values while collating. --check exits with status 1 unless
 * the training loss falls and the forgetful run is clearly worse. */
#include <seqstore.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { C = 2, H = 12, W = 40, B = 16, NSEQ = 64, NTRAIN = 48, LEN = 1200, PERIOD = 90 };

static const double GAIN[C] = {1.0 / 1000, 1.0 / 500}; /* physical = digital * gain */

static uint64_t rng_state = 12345;
static double urand(void) { /* xorshift64*, uniform in [0, 1) */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (double)((rng_state * 0x2545F4914F6CDD1Dull) >> 11) * 0x1.0p-53;
}
static double nrand(void) {
    double u = 1.0 - urand(), v = urand();
    return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}

/* Write NSEQ recordings: channel 0 is noise plus a burst of +-0.8 (the class)
 * for 6 samples every PERIOD samples; channel 1 is unrelated noise. */
static int write_store(const char *path) {
    ss_field f[2] = {{"eeg", SS_I16, 1, 1, {C, 0, 0, 0}}, {"label", SS_I32, 0, 0, {0, 0, 0, 0}}};
    ss_schema schema = {2, f};
    ss_writer *w;
    ss_writer_options wo = SS_WRITER_OPTIONS_INIT;
    wo.flags = SS_WRITE_FORCE;
    int rc = ss_writer_create(&w, path, &schema, &wo);
    if (rc) return rc;
    static int16_t x[LEN][C];
    for (int i = 0; i < NSEQ && !rc; i++) {
        int32_t label = i % 2;
        int phase = (int)(urand() * PERIOD);
        for (int t = 0; t < LEN; t++) {
            double v0 = 0.3 * nrand(), v1 = 0.5 * nrand();
            int k = (t - phase + PERIOD) % PERIOD;
            if (k < 6) v0 += label ? 0.8 : -0.8;
            x[t][0] = (int16_t)lrint(v0 / GAIN[0]);
            x[t][1] = (int16_t)lrint(v1 / GAIN[1]);
        }
        ss_value v[2] = {{x, LEN}, {&label, 1}};
        rc = ss_writer_append(w, v);
    }
    if (!rc) rc = ss_writer_finish(w);
    ss_writer_free(w);
    return rc;
}

/* ------------------------------------------------------------ the model */

typedef struct model {
    float wx[H][C], wh[H][H], b[H], v[H], c;
} model;
#define NPARAM ((int)(sizeof(model) / sizeof(float)))

static void model_init(model *m) {
    memset(m, 0, sizeof *m);
    for (int i = 0; i < H; i++) {
        for (int j = 0; j < C; j++) m->wx[i][j] = (float)(0.5 * nrand());
        for (int j = 0; j < H; j++) m->wh[i][j] = (float)(0.3 * nrand() / sqrt(H));
        m->v[i] = (float)(0.1 * nrand());
    }
}

typedef struct adam {
    float m[NPARAM], v[NPARAM];
    int t;
} adam;

static void adam_step(model *p, const model *g, adam *a, float lr) {
    float *pp = (float *)p;
    const float *gg = (const float *)g;
    double norm = 0;
    for (int i = 0; i < NPARAM; i++) norm += (double)gg[i] * gg[i];
    float clip = norm > 1.0 ? (float)(1.0 / sqrt(norm)) : 1.0f;
    a->t++;
    float c1 = 1 - powf(0.9f, (float)a->t), c2 = 1 - powf(0.999f, (float)a->t);
    for (int i = 0; i < NPARAM; i++) {
        float gi = gg[i] * clip;
        a->m[i] = 0.9f * a->m[i] + 0.1f * gi;
        a->v[i] = 0.999f * a->v[i] + 0.001f * gi * gi;
        pp[i] -= lr * (a->m[i] / c1) / (sqrtf(a->v[i] / c2) + 1e-8f);
    }
}

static float sigmoidf(float z) {
    return 1.0f / (1.0f + expf(-z));
}

/* Forward (and with `g` backward) over one window of one lane: x [W][C],
 * target y, initial state h0, final state out to hT. Returns the summed
 * binary cross-entropy; adds gradients scaled by `scale` into g. */
static double run_lane(const model *m, const float *x, const uint8_t *step, float y,
                       const float *h0, float *hT, model *g, float scale, int *correct) {
    float hs[W + 1][H], p[W];
    double loss = 0;
    memcpy(hs[0], h0, sizeof hs[0]);
    for (int t = 0; t < W; t++) {
        for (int i = 0; i < H; i++) {
            float a = m->b[i];
            for (int j = 0; j < C; j++) a += m->wx[i][j] * x[t * C + j];
            for (int j = 0; j < H; j++) a += m->wh[i][j] * hs[t][j];
            hs[t + 1][i] = tanhf(a);
        }
        float z = m->c;
        for (int i = 0; i < H; i++) z += m->v[i] * hs[t + 1][i];
        p[t] = sigmoidf(z);
        if (step[t]) {
            loss -= y > 0.5f ? log(p[t] + 1e-7) : log(1 - p[t] + 1e-7);
            *correct += (p[t] > 0.5f) == (y > 0.5f);
        }
    }
    memcpy(hT, hs[W], sizeof hs[W]);
    if (!g) return loss;
    float dh[H] = {0};
    for (int t = W - 1; t >= 0; t--) {
        float dz = step[t] ? (p[t] - y) * scale : 0, da[H];
        g->c += dz;
        for (int i = 0; i < H; i++) {
            g->v[i] += dz * hs[t + 1][i];
            float d = dh[i] + dz * m->v[i];
            da[i] = d * (1 - hs[t + 1][i] * hs[t + 1][i]);
        }
        for (int i = 0; i < H; i++) {
            g->b[i] += da[i];
            for (int j = 0; j < C; j++) g->wx[i][j] += da[i] * x[t * C + j];
            for (int j = 0; j < H; j++) g->wh[i][j] += da[i] * hs[t][j];
        }
        for (int j = 0; j < H; j++) {
            float s = 0;
            for (int i = 0; i < H; i++) s += m->wh[i][j] * da[i];
            dh[j] = s;
        }
    }
    return loss;
}

/* One epoch over `examples`; trains when `opt` is not NULL. Returns the mean
 * loss per sample and the accuracy. */
static int run_epoch(ss_store *s, model *m, adam *opt, int forget, uint64_t epoch,
                     const uint64_t *examples, size_t n, double *mean_loss, double *acc) {
    ss_window_options o = SS_WINDOW_OPTIONS_INIT;
    o.field = 0;
    o.label_field = 1;
    o.window = W;
    o.lanes = B;
    o.state_size = H;
    o.state_dtype = SS_F32;
    o.mode = opt ? SS_WINDOW_SEQUENTIAL_RANDOM_START : SS_WINDOW_SEQUENTIAL;
    o.shuffle = opt != NULL;
    o.seed = 2024;
    o.flags = forget ? SS_WINDOW_FORGET_STATE : 0;
    o.out_dtype = SS_F32;
    o.gain = GAIN;
    o.n_gain = sizeof GAIN / sizeof GAIN[0];
    o.examples = examples;
    o.n_examples = n;
    ss_window_reader *r;
    int rc = ss_window_reader_open(&r, s, &o);
    if (rc) return rc;
    rc = ss_window_reader_set_epoch(r, epoch);
    double loss = 0;
    uint64_t samples = 0;
    int correct = 0;
    static float final[B][H];
    while (!rc) {
        const ss_window_batch *b;
        rc = ss_window_reader_next(&b, r);
        if (rc) {
            if (rc == SS_ITEROVER) rc = 0; /* the end of the epoch */
            break;
        }
        model g;
        memset(&g, 0, sizeof g);
        uint64_t active_steps = 0;
        for (uint32_t i = 0; i < b->size; i++)
            for (uint64_t t = 0; t < W; t++) active_steps += b->step_mask[i * W + t];
        float scale = active_steps ? 1.0f / (float)active_steps : 0;
        for (uint32_t i = 0; i < b->size; i++) {
            if (!b->mask[i]) continue;
            int32_t label;
            memcpy(&label, (const uint8_t *)b->label + i * b->label_row_bytes, sizeof label);
            loss += run_lane(m, (const float *)b->data + i * W * C, b->step_mask + i * W,
                             (float)label, (const float *)b->state + i * H, final[i],
                             opt ? &g : NULL, scale, &correct);
        }
        samples += active_steps;
        if (opt) adam_step(m, &g, opt, 0.01f);
        rc = ss_window_reader_register(r, b, final);
    }
    ss_window_reader_free(r);
    *mean_loss = samples ? loss / (double)samples : 0;
    *acc = samples ? (double)correct / (double)samples : 0;
    return rc;
}

static int train(ss_store *s, int forget, int epochs, double *first, double *last,
                 double *eval_loss, double *eval_acc) {
    uint64_t tr[NTRAIN], ev[NSEQ - NTRAIN];
    for (int i = 0; i < NSEQ; i++) {
        if (i < NTRAIN)
            tr[i] = (uint64_t)i;
        else
            ev[i - NTRAIN] = (uint64_t)i;
    }
    model m;
    rng_state = 777;
    model_init(&m);
    static adam opt;
    memset(&opt, 0, sizeof opt);
    printf("%s:\n", forget ? "forget_state (fresh state every window)" : "hidden-state carry");
    for (int e = 0; e < epochs; e++) {
        double loss, acc;
        int rc = run_epoch(s, &m, &opt, forget, (uint64_t)e, tr, NTRAIN, &loss, &acc);
        if (rc) return rc;
        if (e == 0) *first = loss;
        *last = loss;
        printf("  epoch %2d  train loss %.4f  accuracy %.3f\n", e, loss, acc);
    }
    int rc = run_epoch(s, &m, NULL, forget, 0, ev, NSEQ - NTRAIN, eval_loss, eval_acc);
    if (!rc) printf("  eval      loss %.4f  accuracy %.3f\n", *eval_loss, *eval_acc);
    return rc;
}

int main(int argc, char **argv) {
    int epochs = 12, check = 0;
    const char *dir = ".";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--epochs") && i + 1 < argc)
            epochs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
            dir = argv[++i];
        else if (!strcmp(argv[i], "--check"))
            check = 1;
        else {
            fprintf(stderr, "usage: %s [--epochs N] [--dir DIR] [--check]\n", argv[0]);
            return 2;
        }
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/rnn_bptt_eeg.ss", dir);
    ss_store *s = NULL;
    int rc = write_store(path);
    if (!rc) rc = ss_open(&s, path, 0);
    double f0, l0, e0, a0, f1, l1, e1, a1;
    if (!rc) rc = train(s, 0, epochs, &f0, &l0, &e0, &a0);
    if (!rc) rc = train(s, 1, epochs, &f1, &l1, &e1, &a1);
    ss_close(s);
    if (rc) {
        fprintf(stderr, "rnn_bptt: %s: %s\n", ss_strerror(rc), ss_error_message());
        return 1;
    }
    printf("eval loss: carry %.4f, forget_state %.4f\n", e0, e1);
    if (check) {
        int ok = l0 < 0.8 * f0 && e1 > e0 + 0.05;
        printf("check: loss falls (%.4f -> %.4f) and forget_state is worse: %s\n", f0, l0,
               ok ? "ok" : "FAILED");
        return ok ? 0 : 1;
    }
    return 0;
}
