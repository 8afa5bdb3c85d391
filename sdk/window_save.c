/* SPDX-License-Identifier: BSD-2-Clause */
/* window_save.c - save and restore a window reader's position (and hidden
 * states) as a little-endian blob of 64-bit words:
 *   magic, version, flags, fingerprint[12], position[9], lane_seq[B],
 *   per sequence {start, nwin, cur, state, owned}, order[eligible],
 *   parked[park_n], per class {pos, pass}, class_seq[eligible] (classes only),
 *   (version 2) the batch planned ahead: kind, id, epoch, size, active,
 *   planned, rows, then per lane {seq, lane, start, length, index, reset},
 *   then the hidden states (nseq * H bytes) with SS_WINDOW_SAVE_STATES.
 * The position is the one after the planned batch's bookkeeping; restoring
 * puts that batch back as planned, to be collated when it is handed out, so
 * a reader with or without prefetch continues with the same batches. */
#include "window.h"

#include <string.h>

#define SAVE_MAGIC 0x3157444e49575353ull /* "SSWINDW1" */
#define SAVE_VERSION 2
#define FINGERPRINT_WORDS 12
#define POSITION_WORDS 9
#define PREP_WORDS 7
#define PREP_ROW_WORDS 6

static uint64_t seq_hash(const ss_window_reader *r) {
    uint64_t h = r->nseq;
    for (uint64_t q = 0; q < r->nseq; q++) h = ss__rng_hash(h, r->seq_ex[q], r->seq_len[q]);
    return h;
}

static void fingerprint(const ss_window_reader *r, uint64_t *f) {
    f[0] = r->nseq;
    f[1] = r->nelig;
    f[2] = r->W;
    f[3] = r->O;
    f[4] = r->B;
    f[5] = (uint64_t)r->opt.mode;
    f[6] = r->opt.seed;
    f[7] = (uint64_t)r->opt.shuffle;
    f[8] = r->opt.flags;
    /* transforms change the batches: a position saved without them does not
     * apply with them (the callbacks themselves cannot be compared) */
    uint32_t nxf = r->nxf + r->nbxf;
    if (nxf) f[8] = ss__rng_hash(f[8], nxf, 0x78666d73ull);
    f[9] = r->H;
    f[10] = r->nclass;
    f[11] = seq_hash(r);
}

static uint64_t words(const ss_window_reader *r) {
    uint64_t n = 3 + FINGERPRINT_WORDS + POSITION_WORDS + r->B + 5 * r->nseq + r->nelig +
                 r->park_n + 2 * (uint64_t)r->nclass + (r->nclass ? r->nelig : 0) +
                 PREP_WORDS + PREP_ROW_WORDS * (uint64_t)r->B;
    return n;
}

size_t ss_window_reader_state_size(const ss_window_reader *r, unsigned flags) {
    if (!r) return 0;
    size_t n = (size_t)(words(r) * 8);
    if (flags & SS_WINDOW_SAVE_STATES) n += (size_t)(r->nseq * r->H);
    return n;
}

static void put(uint8_t **p, uint64_t v) {
    for (int i = 0; i < 8; i++) (*p)[i] = (uint8_t)(v >> (8 * i));
    *p += 8;
}

/* The planned batch: its rows, as ss__window_plan() left them. */
static void put_prep(uint8_t **p, const ss_window_reader *r) {
    const ss__wslot *sl = r->prep_kind > 0 ? r->prep : NULL;
    put(p, sl ? (uint64_t)r->prep_kind : 0);
    put(p, sl ? sl->b.id : 0);
    put(p, sl ? sl->b.epoch : 0);
    put(p, sl ? sl->b.size : 0);
    put(p, sl ? sl->b.active : 0);
    put(p, sl ? r->prep_planned : 0);
    put(p, sl ? r->prep_rows : 0);
    for (uint32_t row = 0; row < r->B; row++) {
        int has = sl && row < r->prep_rows;
        put(p, has && sl->mask[row] ? sl->seq[row] : SS_NONE);
        put(p, has ? sl->lane[row] : 0);
        put(p, has ? sl->start[row] : 0);
        put(p, has ? sl->length[row] : 0);
        put(p, has ? sl->index[row] : 0);
        put(p, has ? sl->reset[row] : 0);
    }
}

int ss_window_reader_state_save(void *buf, size_t cap, size_t *len, const ss_window_reader *r,
                                unsigned flags) {
    if (len) *len = 0;
    if (!r || (!buf && cap)) return ss__fail(SS_EINVAL, "window reader save: NULL argument");
    ss__window_prefetch_wait(r);
    /* A pending batch that carries no state is released by the next call:
     * with one slot that only unblocks its sequences, which the saved states
     * below anticipate. */
    for (uint32_t k = 0; k < r->nbuf; k++)
        if (r->slots[k].pending && (r->carry || r->nslots > 1))
            return ss__fail(SS_ESTATE, "window reader save: batch %llu is not registered",
                            (unsigned long long)r->slots[k].b.id);
    if (r->prep_kind < 0) /* the plan failed: it is rerun when the caller asks again */
        return ss__fail(SS_ESTATE, "window reader save: %s", r->prep_msg);
    size_t need = ss_window_reader_state_size(r, flags);
    if (len) *len = need;
    if (cap < need)
        return ss__fail(SS_EBUFS, "window reader save: needs %zu bytes, buffer has %zu", need,
                        cap);
    uint8_t *p = buf;
    uint64_t fp[FINGERPRINT_WORDS];
    fingerprint(r, fp);
    put(&p, SAVE_MAGIC);
    put(&p, SAVE_VERSION);
    put(&p, flags & SS_WINDOW_SAVE_STATES);
    for (int i = 0; i < FINGERPRINT_WORDS; i++) put(&p, fp[i]);
    put(&p, r->epoch);
    put(&p, (uint64_t)r->ended);
    put(&p, (uint64_t)r->exhausted);
    put(&p, r->order_pos);
    put(&p, r->park_n);
    put(&p, r->windows_out);
    put(&p, r->epoch_windows);
    put(&p, r->batches_in_epoch);
    put(&p, r->next_id);
    for (uint32_t b = 0; b < r->B; b++) put(&p, r->lane_seq[b]);
    for (uint64_t q = 0; q < r->nseq; q++) {
        put(&p, r->seq_start[q]);
        put(&p, r->seq_nwin[q]);
        put(&p, r->seq_cur[q]);
        uint64_t st = r->seq_st[q];
        if (st == SS_SEQ_BLOCKED)
            st = r->opt.mode == SS_WINDOW_RANDOM || r->seq_cur[q] < r->seq_nwin[q] ? SS_SEQ_NORMAL
                                                                                   : SS_SEQ_DONE;
        put(&p, st);
        put(&p, r->seq_owned[q]);
    }
    for (uint64_t i = 0; i < r->nelig; i++) put(&p, r->order[i]);
    for (uint64_t i = 0; i < r->park_n; i++) put(&p, r->parked[(r->park_head + i) % r->nseq]);
    for (uint32_t c = 0; c < r->nclass; c++) {
        put(&p, r->class_pos[c]);
        put(&p, r->class_pass[c]);
    }
    if (r->nclass)
        for (uint64_t i = 0; i < r->nelig; i++) put(&p, r->class_seq[i]);
    put_prep(&p, r);
    if (flags & SS_WINDOW_SAVE_STATES) memcpy(p, r->hidden, (size_t)(r->nseq * r->H));
    return 0;
}

/* A bounds-checked reader of the blob. */
typedef struct cursor {
    const uint8_t *p, *end;
    int bad;
} cursor;

static uint64_t get(cursor *c) {
    if (c->bad || c->end - c->p < 8) {
        c->bad = 1;
        return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)c->p[i] << (8 * i);
    c->p += 8;
    return v;
}

/* Read (and with `apply` restore into slot 0) the batch planned ahead;
 * returns 1 if it is inconsistent with the reader. */
static int load_prep(ss_window_reader *r, cursor *c, int apply) {
    uint64_t kind = get(c), id = get(c), epoch = get(c), size = get(c), active = get(c);
    uint64_t planned = get(c), rows = get(c), n = 0;
    int bad = kind > SS__PREP_END || rows > r->B || size > rows || active > size ||
              planned > rows || (kind == SS__PREP_BATCH && (active == 0 || size == 0)) ||
              (kind == SS__PREP_END && size != 0) || (kind == SS__PREP_NONE && rows != 0);
    ss__wslot *sl = &r->slots[0];
    for (uint32_t row = 0; row < r->B; row++) {
        uint64_t q = get(c), lane = get(c), start = get(c), len = get(c), idx = get(c);
        uint64_t reset = get(c);
        if (bad || row >= rows) continue;
        int has = q != SS_NONE;
        bad |= (has && q >= r->nseq) || lane >= r->B || reset > 1 || len > r->W;
        if (bad) continue;
        bad |= has && (start > r->seq_len[q] || len > r->seq_len[q] - start);
        n += has;
        if (apply && !bad) {
            sl->seq[row] = q;
            sl->mask[row] = (uint8_t)has;
            sl->lane[row] = (uint32_t)lane;
            sl->example[row] = has ? r->seq_ex[q] : 0;
            sl->start[row] = start;
            sl->length[row] = len;
            sl->index[row] = idx;
            sl->reset[row] = (uint8_t)reset;
            if (has) r->seq_st[q] = SS_SEQ_BLOCKED; /* planned: not free to plan again */
        }
    }
    bad |= c->bad || n != planned || (kind == SS__PREP_BATCH && n < active);
    if (apply && !bad && kind != SS__PREP_NONE) {
        sl->b.id = id;
        sl->b.epoch = epoch;
        sl->b.size = (uint32_t)size;
        sl->b.active = (uint32_t)active;
        r->prep = sl;
        r->prep_kind = (int)kind;
        r->prep_collated = 0; /* collated when it is handed out */
        r->prep_rc = 0;
        r->prep_planned = planned;
        r->prep_rows = (uint32_t)rows;
    }
    return bad;
}

/* Read (and with `apply` store) the position; returns 0 or an error. */
static int load(ss_window_reader *r, const void *buf, size_t size, int apply) {
    cursor c = {buf, (const uint8_t *)buf + size, 0};
    if (get(&c) != SAVE_MAGIC || c.bad)
        return ss__fail(SS_EINVAL, "window reader restore: not a saved window reader");
    uint64_t version = get(&c);
    if (version != 1 && version != SAVE_VERSION)
        return ss__fail(SS_EINVAL, "window reader restore: unknown save version");
    uint64_t flags = get(&c), fp[FINGERPRINT_WORDS];
    fingerprint(r, fp);
    for (int i = 0; i < FINGERPRINT_WORDS; i++)
        if (get(&c) != fp[i] && !c.bad)
            return ss__fail(SS_EINVAL,
                            "window reader restore: saved with other options or "
                            "another split (fingerprint word %d differs)",
                            i);
    uint64_t pos[POSITION_WORDS];
    for (int i = 0; i < POSITION_WORDS; i++) pos[i] = get(&c);
    int bad = c.bad || pos[1] > 1 || pos[2] > 1 || pos[3] > r->nelig || pos[4] > r->nseq;
    if (apply) {
        r->epoch = pos[0];
        r->ended = (int)pos[1];
        r->exhausted = (int)pos[2];
        r->order_pos = pos[3];
        r->park_head = 0;
        r->park_n = pos[4];
        r->windows_out = pos[5];
        r->epoch_windows = pos[6];
        r->batches_in_epoch = pos[7];
        r->next_id = pos[8];
    }
    for (uint32_t b = 0; b < r->B && !bad; b++) {
        uint64_t v = get(&c);
        bad |= v != SS_NONE && v >= r->nseq;
        if (apply) r->lane_seq[b] = v;
    }
    for (uint64_t q = 0; q < r->nseq && !bad; q++) {
        uint64_t s = get(&c), nw = get(&c), cur = get(&c), st = get(&c), own = get(&c);
        bad |= cur > nw || st > SS_SEQ_DONE || own > 1 || st == SS_SEQ_BLOCKED;
        /* the windows must be the sequence's: a start inside it, its count */
        bad |= s > r->S || s > r->seq_len[q] || nw != ss__window_count(r, r->seq_len[q], s);
        if (apply) {
            r->seq_start[q] = s;
            r->seq_nwin[q] = nw;
            r->seq_cur[q] = cur;
            r->seq_st[q] = (uint8_t)st;
            r->seq_owned[q] = (uint8_t)own;
        }
    }
    for (uint64_t i = 0; i < r->nelig && !bad; i++) {
        uint64_t v = get(&c);
        bad |= v >= r->nseq;
        if (apply) r->order[i] = v;
    }
    for (uint64_t i = 0; i < pos[4] && !bad; i++) {
        uint64_t v = get(&c);
        bad |= v >= r->nseq;
        if (apply) r->parked[i] = v;
    }
    for (uint32_t k = 0; k < r->nclass && !bad; k++) {
        uint64_t p = get(&c), pass = get(&c);
        bad |= p > r->class_off[k + 1] - r->class_off[k];
        if (apply) {
            r->class_pos[k] = p;
            r->class_pass[k] = pass;
        }
    }
    for (uint64_t i = 0; r->nclass && i < r->nelig && !bad; i++) {
        uint64_t v = get(&c);
        bad |= v >= r->nseq;
        if (apply) r->class_seq[i] = v;
    }
    if (!bad && version >= 2) bad = load_prep(r, &c, apply);
    if (!bad && (flags & SS_WINDOW_SAVE_STATES)) {
        if ((uint64_t)(c.end - c.p) < r->nseq * r->H)
            bad = 1;
        else if (apply)
            memcpy(r->hidden, c.p, (size_t)(r->nseq * r->H));
    }
    if (bad || c.bad)
        return ss__fail(SS_EINVAL, "window reader restore: truncated or inconsistent data");
    return 0;
}

int ss_window_reader_state_load(ss_window_reader *r, const void *buf, size_t size) {
    if (!r) return ss__fail(SS_EINVAL, "window reader restore: NULL reader");
    ss__window_prefetch_wait(r);
    for (uint32_t k = 0; k < r->nbuf; k++)
        if (r->slots[k].pending && r->carry)
            return ss__fail(SS_ESTATE, "window reader restore: batch %llu is not registered",
                            (unsigned long long)r->slots[k].b.id);
    if (!buf) return ss__fail(SS_EINVAL, "window reader restore: NULL buffer");
    int rc = load(r, buf, size, 0);
    if (rc) return rc;
    for (uint32_t k = 0; k < r->nbuf; k++) r->slots[k].pending = r->slots[k].anticipated = 0;
    ss__window_prep_drop(r);
    memset(r->seq_stamp, 0, r->nseq * sizeof *r->seq_stamp);
    rc = load(r, buf, size, 1);
    if (!rc) r->failed = 0;
    return rc;
}
