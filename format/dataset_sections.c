/* SPDX-License-Identifier: BSD-2-Clause */
/* dataset_sections.c - a dataset's sections store (spec/FORMAT.md §13.1):
 * the SDK sections that number the whole dataset's examples (stored
 * lengths, splits, bucket indices), kept once in DIR/dataset.sections.ss, an
 * ordinary store bound to one manifest by that manifest's checksum.
 *
 * Why a store and not more manifest lines: the sections are typed arrays of
 * one entry per example (megabytes), which the store format already keeps
 * aligned, checksummed and readable in place; and `seqstore split`/`index`
 * then write them with the ordinary writer, atomically, without touching the
 * manifest (whose bytes, and so dataset version 1, stay as they were). */
#include "manifest.h"
#include "sections.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

int ss__sections_path(char **out, const char *dir) {
    if (asprintf(out, "%s/%s", dir, SS_SECTIONS_NAME) < 0) {
        *out = NULL;
        return ss__fail(SS_ENOMEM, "out of memory");
    }
    return 0;
}

/* The binding's text: the manifest checksum as 16 lowercase hex digits. */
static void ss_binding_text(char buf[17], uint64_t checksum) {
    snprintf(buf, 17, "%016" PRIx64, checksum);
}

int ss__sections_open(ss_store **out, const char *dir, const ss_manifest *m, unsigned flags) {
    *out = NULL;
    char *path;
    int rc = ss__sections_path(&path, dir);
    if (rc) return rc;
    struct stat st;
    if (stat(path, &st) != 0) { /* none: a dataset built before §13.1 */
        free(path);
        return 0;
    }
    ss_store *s = NULL;
    rc = ss_open(&s, path, (flags & SS_OPEN_VERIFY) | SS_OPEN_NOLOCK);
    ss_attr a;
    char want[17];
    ss_binding_text(want, m->checksum);
    int brc = rc ? 0 : ss_attr_get(&a, s, SS_SECTIONS_BINDING);
    if (brc && brc != SS_ENOTFOUND)
        rc = brc; /* damaged: its own message, not "another manifest" */
    else if (!rc && (brc || a.type != SS_ATTR_TEXT || a.size != 16 || memcmp(a.data, want, 16)))
        rc = ss__fail(SS_ECORRUPT,
                      "%s: belongs to another manifest (attribute '" SS_SECTIONS_BINDING
                      "' is not the manifest's checksum %s): run `seqstore dataset build` again",
                      path, want);
    if (rc) {
        ss_close(s);
        rc = ss__context(rc, "sections store");
    } else {
        *out = s;
    }
    free(path);
    return rc;
}

/* An exclusive lock on the sections store `sec` as its name now leads to:
 * the lock is taken on the file, and a writer that held it before may have
 * renamed another file over the name meanwhile, so the name is checked
 * again once the lock is granted. Opened for writing where possible, since
 * NFS grants an exclusive lock only then. `*fd` holds the lock. */
static int ss_sections_lock(int *fd, const char *sec) {
    for (;;) {
        int f = open(sec, O_RDWR | O_CLOEXEC);
        if (f < 0 && (errno == EACCES || errno == EROFS)) f = open(sec, O_RDONLY | O_CLOEXEC);
        if (f < 0)
            return ss__fail(errno == ENOENT ? SS_ENOTFOUND : SS_EIO, "open '%s': %s", sec,
                            strerror(errno));
        struct stat held, now;
        int rc;
        while ((rc = flock(f, LOCK_EX)) != 0 && errno == EINTR) continue;
        if (rc != 0) {
            int e = errno;
            close(f);
            return ss__fail(SS_EIO, "lock '%s': %s", sec, strerror(e));
        }
        if (fstat(f, &held) == 0 && stat(sec, &now) == 0 && held.st_ino == now.st_ino &&
            held.st_dev == now.st_dev) {
            *fd = f;
            return 0;
        }
        close(f);
    }
}

/* Copy the locked file `from` (all its bytes: a file no writer changes is a
 * valid LMDB environment) to the new file `to`. */
static int ss_copy_file(int from, const char *to) {
    int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out < 0)
        return ss__fail(errno == ENOSPC || errno == EDQUOT ? SS_EFULL : SS_EIO, "create '%s': %s",
                        to, strerror(errno));
    struct stat st;
    int rc = fstat(from, &st) == 0 ? 0 : ss__fail(SS_EIO, "stat: %s", strerror(errno));
    loff_t in_off = 0;
    while (!rc && in_off < st.st_size) {
        ssize_t n = copy_file_range(from, &in_off, out, NULL, (size_t)(st.st_size - in_off), 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0)
            rc = ss__fail(n < 0 && (errno == ENOSPC || errno == EDQUOT) ? SS_EFULL : SS_EIO,
                          "copy to '%s': %s", to, n < 0 ? strerror(errno) : "file shrank");
    }
    if (close(out) != 0 && !rc) rc = ss__fail(SS_EIO, "close '%s': %s", to, strerror(errno));
    if (rc) unlink(to);
    return rc;
}

/* A dataset's sections are never written in place, since readers map the
 * sections store without a lock file (a reader table there is what would
 * stop a writer from reusing the pages they read): the writer writes a copy
 * under the lock and renames it over the store when it finishes. */
static int ss_sections_copy_writer(ss_writer **out, char *sec) {
    int fd = -1;
    char *tmp = NULL;
    int rc = ss_sections_lock(&fd, sec);
    if (rc == SS_ENOTFOUND)
        rc = ss__fail(SS_ENOTFOUND,
                      "dataset has no sections store %s: run `seqstore dataset build` "
                      "(this library's) first",
                      sec);
    if (!rc && asprintf(&tmp, "%.*s.%s.%ld.tmp", (int)(strrchr(sec, '/') - sec + 1), sec,
                        SS_SECTIONS_NAME, (long)getpid()) < 0)
        rc = ss__fail(SS_ENOMEM, "out of memory"), tmp = NULL;
    if (!rc) rc = ss_copy_file(fd, tmp);
    if (!rc && (rc = ss_writer_open(out, tmp, NULL, NULL)) != 0) {
        char *lock = NULL;
        unlink(tmp);
        if (asprintf(&lock, "%s-lock", tmp) >= 0) unlink(lock);
        free(lock);
    }
    if (rc) {
        if (fd >= 0) close(fd);
        free(sec);
    } else {
        ss__writer_publish(*out, sec, fd);
    }
    free(tmp);
    return rc;
}

int ss_sections_writer_open(ss_writer **out, const char *path) {
    if (!out || !path) return ss__fail(SS_EINVAL, "ss_sections_writer_open: NULL argument");
    *out = NULL;
    if (!ss__dataset_probe(path)) return ss_writer_open(out, path, NULL, NULL);
    char *file = NULL, *dir = NULL, *sec = NULL;
    int rc = ss__manifest_locate(path, &file, &dir);
    if (!rc) rc = ss__sections_path(&sec, dir);
    if (!rc) rc = ss_sections_copy_writer(out, sec); /* takes sec */
    free(file);
    free(dir);
    return rc ? ss__context(rc, "dataset '%s'", path) : 0;
}

int ss__sections_count(uint64_t *count, const char *path, const ss_writer *w) {
    *count = ss_writer_count(w);
    if (!ss__dataset_probe(path)) return 0;
    ss_manifest m;
    int rc = ss__manifest_read(&m, path);
    if (!rc) *count = m.examples;
    ss__manifest_free(&m);
    return rc;
}

/* ------------------------------------------------------------- building */

/* ---------------------------------------------------- global lengths
 *
 * The dataset's lengths are its shards' stored lengths sections, one after
 * the other: each shard's section is already the narrowest type for its
 * longest example, so the dataset's type is the widest of theirs and each
 * section is copied (or widened) as it is, with no pass over any index.
 * Only a shard without a section (older, or too large for one) is read
 * through ss_lengths(). */

/* Widen the `n` entries of `d` in place from `from` to `to` bytes (d holds
 * n * to bytes); from the end, so no entry is overwritten before read. */
static void ss_widen(unsigned char *d, uint64_t n, unsigned from, unsigned to) {
    for (uint64_t i = n; i-- > 0;) {
        uint64_t v = 0;
        for (unsigned b = 0; b < from; b++) v |= (uint64_t)d[i * from + b] << (8 * b);
        for (unsigned b = 0; b < to; b++) d[i * to + b] = (unsigned char)(v >> (8 * b));
    }
}

/* Room for `more` entries of width `width` in field `f`'s array (widened
 * first when `width` is wider). 0 or SS_ENOMEM; too large: f->off. */
static int ss_glen_reserve(ss_global_lengths_field *f, uint64_t more, unsigned width) {
    unsigned w = width > f->width ? width : f->width;
    if (f->n + more > (SS_MAX_VALUE - 2 * SS_PAGE) / w) { /* too large for one section (§7.3) */
        free(f->data);
        f->data = NULL;
        f->off = 1;
        return 0;
    }
    uint64_t need = (f->n + more) * w;
    if (need > f->cap) {
        uint64_t cap = f->cap ? f->cap : 4096;
        while (cap < need) cap *= 2;
        unsigned char *p = realloc(f->data, cap);
        if (!p) return ss__fail(SS_ENOMEM, "out of memory (the dataset's lengths)");
        f->data = p;
        f->cap = cap;
    }
    if (w > f->width) ss_widen(f->data, f->n, f->width, w);
    f->width = w;
    return 0;
}

/* A shard without a lengths section: its lengths through ss_lengths(), in
 * blocks (bounded memory); two passes, the longest first. */
static int ss_glen_add_slow(ss_global_lengths_field *f, const ss_store *s, uint32_t field) {
    enum { BLOCK = 65536 };
    uint64_t *buf = malloc(BLOCK * sizeof *buf), count = ss_count(s), longest = 0;
    if (!buf) return ss__fail(SS_ENOMEM, "out of memory");
    int rc = 0;
    for (int pass = 0; pass < 2 && !rc && !f->off; pass++) {
        if (pass) {
            unsigned width;
            ss__lengths_dtype(longest, &width);
            if ((rc = ss_glen_reserve(f, count, width)) || f->off) break;
        }
        for (uint64_t i = 0; i < count && !rc; i += BLOCK) {
            uint64_t take = count - i < BLOCK ? count - i : BLOCK;
            if ((rc = ss_lengths(buf, s, field, i, take))) break;
            for (uint64_t j = 0; j < take; j++) {
                if (!pass) {
                    if (buf[j] > longest) longest = buf[j];
                    continue;
                }
                unsigned char *p = f->data + (f->n++) * f->width;
                for (unsigned b = 0; b < f->width; b++) p[b] = (unsigned char)(buf[j] >> (8 * b));
            }
        }
    }
    free(buf);
    return rc;
}

int ss__global_lengths_add(ss_global_lengths *g, const ss_store *s) {
    for (uint32_t k = 0; k < g->nfields && k < s->h.nfields; k++) {
        ss_global_lengths_field *f = &g->f[k];
        if (!s->h.fields[k].def.sequence || f->off) continue;
        if (!f->width) f->width = 1;
        const void *data;
        ss_dtype dtype;
        uint64_t count;
        int rc = ss_lengths_view(&data, &dtype, &count, s, k);
        if (rc == SS_ENOTFOUND) {
            if ((rc = ss_glen_add_slow(f, s, k))) return rc;
            continue;
        }
        if (rc) return rc;
        unsigned width = (unsigned)ss_dtype_size(dtype);
        if ((rc = ss_glen_reserve(f, count, width))) return rc;
        if (f->off) continue;
        unsigned char *out = f->data + f->n * f->width;
        if (width == f->width) {
            if (count) memcpy(out, data, count * width);
        } else {
            for (uint64_t i = 0; i < count; i++) {
                uint64_t v = ss__lengths_value(data, dtype, i);
                for (unsigned b = 0; b < f->width; b++) out[i * f->width + b] = (unsigned char)(v >> (8 * b));
            }
        }
        f->n += count;
    }
    return 0;
}

void ss__global_lengths_free(ss_global_lengths *g) {
    for (uint32_t k = 0; k < SS_MAX_FIELDS; k++) free(g->f[k].data);
    memset(g, 0, sizeof *g);
}

/* ss.lengths.F of every sequence field over the whole dataset. */
static int ss_put_global_lengths(ss_writer *w, const ss_manifest *m, const ss_global_lengths *g) {
    for (uint32_t k = 0; k < m->nfields && k < g->nfields; k++) {
        const ss_global_lengths_field *f = &g->f[k];
        if (!m->fields[k].sequence || f->off) continue;
        if (f->n != m->examples)
            return ss__fail(SS_EINVAL, "the dataset's lengths of field '%s': %" PRIu64
                                       " of %" PRIu64 " examples gathered",
                            m->fields[k].name, f->n, m->examples);
        uint32_t dtype = f->width == 8   ? SS_U64
                         : f->width == 4 ? SS_U32
                         : f->width == 2 ? SS_U16
                                         : SS_U8;
        char name[SS_MAX_ATTR_NAME + 1];
        snprintf(name, sizeof name, SS_LENGTHS_ATTR_PREFIX "%s", m->fields[k].name);
        unsigned char none = 0;
        int rc = ss_writer_set_attr(w, name, dtype, f->n ? f->data : &none,
                                    f->n * (f->width ? f->width : 1));
        if (rc) return rc;
    }
    return 0;
}

/* A section a user made (a split, a bucket index): kept across a rebuild
 * with the same manifest, since it numbers the same examples. */
static int ss_user_section(const char *name) {
    return !strncmp(name, "ss.", 3) &&
           strncmp(name, SS_LENGTHS_ATTR_PREFIX, strlen(SS_LENGTHS_ATTR_PREFIX));
}

/* Copy the user's sections of the old sections store, if it is bound to the
 * same manifest; count those dropped otherwise. */
static int ss_keep_sections(ss_writer *w, const char *dir, const ss_manifest *m, uint64_t *kept,
                            uint64_t *dropped) {
    char *path;
    int rc = ss__sections_path(&path, dir);
    if (rc) return rc;
    ss_store *old = NULL;
    struct stat st;
    int exists = stat(path, &st) == 0;
    free(path);
    if (!exists) return 0;
    rc = ss__sections_open(&old, dir, m, 0);
    if (rc) { /* another manifest's, or unreadable: its sections number other examples */
        ss_store *raw = NULL;
        char *p2 = NULL;
        if (!ss__sections_path(&p2, dir) && !ss_open(&raw, p2, SS_OPEN_NOLOCK))
            for (uint64_t k = 0; k < ss_attr_count(raw); k++) {
                ss_attr a;
                if (!ss_attr_at(&a, raw, k) && ss_user_section(a.name)) ++*dropped;
            }
        ss_close(raw);
        free(p2);
        return 0;
    }
    for (uint64_t k = 0; k < ss_attr_count(old) && !rc; k++) {
        ss_attr a;
        int arc = ss_attr_at(&a, old, k);
        /* the build's own sections are written anew, a damaged one too; a
         * damaged split or index is an error (it would be lost) */
        if (arc && (arc != SS_ECORRUPT || ss_user_section(a.name))) {
            rc = arc;
            break;
        }
        if (!ss_user_section(a.name)) continue;
        if (!(rc = ss_writer_set_attr(w, a.name, a.type, a.data, a.size))) ++*kept;
    }
    ss_close(old);
    return rc;
}

int ss__sections_build(const char *dir, const ss_manifest *m, const ss_global_lengths *lengths,
                       uint64_t *kept, uint64_t *dropped) {
    static ss_field one[1] = {{"dataset", SS_U8, 0, 0, {0}}};
    static const ss_schema schema = {1, one};
    *kept = *dropped = 0;
    char *tmp = NULL, *lock = NULL, *final = NULL;
    if (asprintf(&tmp, "%s/.%s.tmp", dir, SS_SECTIONS_NAME) < 0 ||
        asprintf(&lock, "%s-lock", tmp) < 0 || ss__sections_path(&final, dir)) {
        free(tmp);
        free(lock);
        return ss__fail(SS_ENOMEM, "out of memory");
    }
    ss_writer_options o = SS_WRITER_OPTIONS_INIT;
    o.flags = SS_WRITE_FORCE;
    ss_writer *w = NULL;
    char bind[17];
    ss_binding_text(bind, m->checksum);
    /* no sections writer replaces the old store meanwhile (its sections are kept) */
    int held = -1, rc = ss_sections_lock(&held, final);
    if (rc == SS_ENOTFOUND) rc = 0;
    if (!rc) rc = ss_writer_create(&w, tmp, &schema, &o);
    if (!rc) rc = ss_writer_set_attr(w, SS_SECTIONS_BINDING, SS_ATTR_TEXT, bind, 16);
    if (!rc) rc = ss_put_global_lengths(w, m, lengths);
    if (!rc) rc = ss_keep_sections(w, dir, m, kept, dropped);
    if (!rc) rc = ss_writer_finish(w);
    ss_writer_free(w);
    /* The file is this call's own (a fresh temporary name, just closed): its
     * lock file has no other user, and a dataset is read without one. */
    unlink(lock);
    if (!rc && rename(tmp, final) != 0)
        rc = ss__fail(SS_EIO, "rename '%s' to '%s': %s", tmp, final, strerror(errno));
    if (rc) unlink(tmp);
    if (held >= 0) close(held);
    free(tmp);
    free(lock);
    free(final);
    return rc ? ss__context(rc, "dataset '%s': sections store", dir) : 0;
}
