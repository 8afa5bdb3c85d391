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

typedef struct ss_lengths_out {
    unsigned char *data;
    unsigned width;
} ss_lengths_out;

/* The longest example of `field` over every shard (pass 0), or every length
 * written at `out` in the width chosen (pass 1). Read in blocks through
 * ss_lengths(), so memory stays bounded whatever the shards hold. */
static int ss_gather_lengths(ss_store *const *shards, uint32_t n, uint32_t field, uint64_t *longest,
                             ss_lengths_out *out) {
    enum { BLOCK = 65536 };
    uint64_t *buf = malloc(BLOCK * sizeof *buf), at = 0;
    if (!buf) return ss__fail(SS_ENOMEM, "out of memory");
    int rc = 0;
    for (uint32_t k = 0; k < n && !rc; k++) {
        uint64_t count = ss_count(shards[k]);
        for (uint64_t i = 0; i < count && !rc; i += BLOCK) {
            uint64_t take = count - i < BLOCK ? count - i : BLOCK;
            if ((rc = ss_lengths(buf, shards[k], field, i, take))) break;
            for (uint64_t j = 0; j < take; j++, at++) {
                if (!out) {
                    if (buf[j] > *longest) *longest = buf[j];
                    continue;
                }
                unsigned char *p = out->data + at * out->width;
                for (unsigned b = 0; b < out->width; b++) p[b] = (unsigned char)(buf[j] >> (8 * b));
            }
        }
    }
    free(buf);
    return rc;
}

/* ss.lengths.F of every sequence field over the whole dataset. */
static int ss_put_global_lengths(ss_writer *w, const ss_manifest *m, ss_store *const *shards) {
    for (uint32_t f = 0; f < m->nfields; f++) {
        if (!m->fields[f].sequence) continue;
        uint64_t longest = 0;
        int rc = ss_gather_lengths(shards, m->nshards, f, &longest, NULL);
        if (rc) return rc;
        unsigned width;
        uint32_t dtype = ss__lengths_dtype(longest, &width);
        if (m->examples > (SS_MAX_VALUE - 2 * SS_PAGE) / width) continue; /* too large (§7.3) */
        ss_lengths_out out = {malloc(m->examples ? m->examples * width : 1), width};
        if (!out.data) return ss__fail(SS_ENOMEM, "out of memory");
        rc = ss_gather_lengths(shards, m->nshards, f, NULL, &out);
        char name[SS_MAX_ATTR_NAME + 1];
        snprintf(name, sizeof name, SS_LENGTHS_ATTR_PREFIX "%s", m->fields[f].name);
        if (!rc) rc = ss_writer_set_attr(w, name, dtype, out.data, m->examples * width);
        free(out.data);
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

int ss__sections_build(const char *dir, const ss_manifest *m, ss_store *const *shards,
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
    if (!rc) rc = ss_put_global_lengths(w, m, shards);
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
