/* SPDX-License-Identifier: BSD-2-Clause */
/* cache.c - the verified shard cache (spec/FORMAT.md §14.3).
 *
 * CACHE/ds-HASH/ holds one dataset URL's files: `url` (the URL it caches),
 * `dataset.manifest`, `dataset.sections.ss` and shards/DIGEST.ss, a shard
 * named by its header digest. A shard file appears only by rename of a
 * downloaded, checked temporary file (shards/.DIGEST.tmp), so a kill at any
 * moment leaves whole verified shards and at most a temporary file, which the
 * next downloader of that shard overwrites and an eviction scan removes.
 *
 * Locks (flock, per open file, so threads of one process take turns too):
 * shards/DIGEST.lock exclusive while one process downloads DIGEST (the others
 * wait, then find the file); a shared lock on the shard file itself while a
 * store maps it; CACHE/.evict.lock exclusive while room is made. Eviction
 * removes the least recently used shard files (mtime, touched at each open)
 * whose exclusive lock it can take without waiting: those no process maps. */
#include "remote_impl.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

static int cache_mkdir(const char *path) {
    if (mkdir(path, 0777) == 0 || errno == EEXIST) return 0;
    return ss__rfail(errno == ENOSPC ? SS_EFULL : SS_EIO, "cache: mkdir '%s': %s", path,
                     strerror(errno));
}

/* mkdir -p */
static int cache_mkdirs(const char *path) {
    char *p = strdup(path);
    if (!p) return ss__rfail(SS_ENOMEM, "out of memory");
    int rc = 0;
    for (char *s = p + 1; *s && !rc; s++)
        if (*s == '/') {
            *s = '\0';
            rc = cache_mkdir(p);
            *s = '/';
        }
    if (!rc) rc = cache_mkdir(p);
    free(p);
    return rc;
}

static int cache_errno_code(int e) {
    return e == ENOSPC || e == EDQUOT ? SS_EFULL : SS_EIO;
}

static void cache_sync_dir(const char *dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) fsync(fd), close(fd);
}

static int cache_write_all(int fd, const void *data, size_t len) {
    for (size_t off = 0; off < len;) {
        ssize_t w = write(fd, (const char *)data + off, len - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return w < 0 ? errno : ENOSPC;
        off += (size_t)w;
    }
    return 0;
}

/* Does `path` hold exactly these bytes? */
static int cache_same(const char *path, const void *data, size_t len) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    struct stat st;
    int same = fstat(fd, &st) == 0 && (uint64_t)st.st_size == len;
    char buf[65536];
    for (size_t off = 0; same && off < len;) {
        ssize_t r = pread(fd, buf, len - off < sizeof buf ? len - off : sizeof buf, (off_t)off);
        same = r > 0 && !memcmp(buf, (const char *)data + off, (size_t)r);
        off += r > 0 ? (size_t)r : 0;
    }
    close(fd);
    return same;
}

int ss__cache_write_file(const char *dir, const char *name, const void *data, size_t len) {
    char tmp[4096], final[4096];
    snprintf(tmp, sizeof tmp, "%s/.%s.%ld.tmp", dir, name, (long)getpid());
    snprintf(final, sizeof final, "%s/%s", dir, name);
    if (cache_same(final, data, len)) return 0; /* an open of a cached dataset writes nothing */
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    int e = fd < 0 ? errno : cache_write_all(fd, data, len);
    if (!e && fsync(fd) != 0) e = errno;
    if (fd >= 0 && close(fd) != 0 && !e) e = errno;
    if (!e && rename(tmp, final) != 0) e = errno;
    if (e) {
        unlink(tmp);
        return ss__rfail(cache_errno_code(e), "cache: write '%s': %s", final, strerror(e));
    }
    cache_sync_dir(dir);
    return 0;
}

int ss__cache_fetch_file(const ss__remote *r, const ss__url *u, const char *name, const char *dir,
                         const char *file) {
    char tmp[4096], final[4096];
    snprintf(tmp, sizeof tmp, "%s/.%s.%ld.tmp", dir, file, (long)getpid());
    snprintf(final, sizeof final, "%s/%s", dir, file);
    int fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0)
        return ss__rfail(cache_errno_code(errno), "cache: create '%s': %s", tmp, strerror(errno));
    uint64_t len;
    int rc = ss__object_get_fd(&len, r, u, name, fd, NULL, NULL);
    int e = 0;
    if (!rc && fsync(fd) != 0) e = errno;
    if (close(fd) != 0 && !e) e = errno;
    if (!rc && !e && rename(tmp, final) != 0) e = errno;
    if (!rc && e) rc = ss__rfail(cache_errno_code(e), "cache: write '%s': %s", final, strerror(e));
    if (rc) unlink(tmp);
    if (rc == SS_ENOTFOUND) unlink(final);
    return rc;
}

int ss__cache_dataset_dir(char **out, const ss__remote *r, const ss__url *u) {
    /* the same s3:// URL at another endpoint is another dataset */
    char *key = NULL, *dir = NULL;
    *out = NULL;
    if (asprintf(&key, "%s\n%s", u->scheme == SS__URL_S3 && r->aws.endpoint ? r->aws.endpoint : "",
                 u->shown) < 0)
        return ss__rfail(SS_ENOMEM, "out of memory");
    unsigned long long h = (unsigned long long)XXH3_64bits(key, strlen(key));
    free(key);
    if (asprintf(&dir, "%s/ds-%016llx/shards", r->cache_dir, h) < 0)
        return ss__rfail(SS_ENOMEM, "out of memory");
    int rc = cache_mkdirs(dir);
    dir[strlen(dir) - strlen("/shards")] = '\0';
    if (!rc) rc = ss__cache_write_file(dir, "url", u->shown, strlen(u->shown));
    if (rc) {
        free(dir);
        return ss__rcontext(rc, "cache '%s'", r->cache_dir);
    }
    *out = dir;
    return 0;
}

/* ------------------------------------------------------ eviction */

typedef struct cache_file {
    char *path;
    uint64_t size;
    struct timespec used;
} cache_file;

typedef struct cache_scan {
    cache_file *f;
    size_t n, cap;
    uint64_t total;
} cache_scan;

/* A leftover temporary file: its shard's download lock is free. */
static void cache_drop_stale_tmp(const char *shards, const char *name) {
    char lock[4096], tmp[4096];
    size_t n = strlen(name);
    if (snprintf(lock, sizeof lock, "%s/%.*s.lock", shards, (int)(n - 5), name + 1) >=
            (int)sizeof lock ||
        snprintf(tmp, sizeof tmp, "%s/%s", shards, name) >= (int)sizeof tmp)
        return;
    int fd = open(lock, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        unlink(tmp);
        return;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) unlink(tmp);
    close(fd);
}

static void cache_scan_shards(cache_scan *s, const char *shards) {
    DIR *d = opendir(shards);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        char path[4096];
        struct stat st;
        if (snprintf(path, sizeof path, "%s/%s", shards, e->d_name) >= (int)sizeof path) continue;
        int is_tmp = e->d_name[0] == '.' && n > 5 && !strcmp(e->d_name + n - 4, ".tmp");
        int is_ss = e->d_name[0] != '.' && n > 3 && !strcmp(e->d_name + n - 3, ".ss");
        if (is_tmp) cache_drop_stale_tmp(shards, e->d_name);
        if (!(is_tmp || is_ss) || stat(path, &st) != 0) continue;
        s->total += (uint64_t)st.st_size;
        if (!is_ss) continue;
        if (s->n == s->cap) {
            size_t cap = s->cap ? 2 * s->cap : 64;
            cache_file *g = realloc(s->f, cap * sizeof *g);
            if (!g) continue;
            s->f = g, s->cap = cap;
        }
        char *p = strdup(path);
        if (p) s->f[s->n++] = (cache_file){p, (uint64_t)st.st_size, st.st_mtim};
    }
    closedir(d);
}

static int cache_older(const void *a, const void *b) {
    const cache_file *x = a, *y = b;
    if (x->used.tv_sec != y->used.tv_sec) return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
    return x->used.tv_nsec < y->used.tv_nsec ? -1 : x->used.tv_nsec > y->used.tv_nsec;
}

/* Remove unmapped shards, oldest first, until `need` more bytes fit. */
static int cache_make_room(const ss__remote *r, uint64_t need, const char *what) {
    if (need > r->cache_bytes)
        return ss__rfail(SS_ETOOBIG, "%s is %llu bytes, over the cache limit of %llu bytes",
                         what, (unsigned long long)need, (unsigned long long)r->cache_bytes);
    char lock[4096];
    snprintf(lock, sizeof lock, "%s/.evict.lock", r->cache_dir);
    int lfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (lfd < 0 || flock(lfd, LOCK_EX) != 0) {
        int e = errno;
        if (lfd >= 0) close(lfd);
        return ss__rfail(cache_errno_code(e), "cache: lock '%s': %s", lock, strerror(e));
    }
    cache_scan s = {0};
    DIR *d = opendir(r->cache_dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (strncmp(e->d_name, "ds-", 3)) continue;
        char shards[4096];
        snprintf(shards, sizeof shards, "%s/%s/shards", r->cache_dir, e->d_name);
        cache_scan_shards(&s, shards);
    }
    if (d) closedir(d);
    if (s.n) qsort(s.f, s.n, sizeof *s.f, cache_older);
    for (size_t i = 0; i < s.n && s.total + need > r->cache_bytes; i++) {
        int fd = open(s.f[i].path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        if (flock(fd, LOCK_EX | LOCK_NB) == 0 && unlink(s.f[i].path) == 0) s.total -= s.f[i].size;
        close(fd);
    }
    int rc = 0;
    if (s.total + need > r->cache_bytes)
        rc = ss__rfail(SS_EFULL,
                       "cache '%s': %s needs %llu bytes, and the shards that open datasets map "
                       "hold %llu of the limit of %llu bytes",
                       r->cache_dir, what, (unsigned long long)need, (unsigned long long)s.total,
                       (unsigned long long)r->cache_bytes);
    for (size_t i = 0; i < s.n; i++) free(s.f[i].path);
    free(s.f);
    close(lfd);
    return rc;
}

/* ------------------------------------------------------- shards */

typedef struct cache_dl {
    const ss__remote *r;
    const char *what;
} cache_dl;

static int cache_on_length(void *vctx, uint64_t length) {
    cache_dl *c = vctx;
    return cache_make_room(c->r, length, c->what);
}

/* Download `name` into `tmp` and check it. */
static int cache_download(const ss__remote *r, const ss__url *u, const char *name,
                          const char *tmp, const char *what, const ss__verifier *v) {
    int fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0)
        return ss__rfail(cache_errno_code(errno), "cache: create '%s': %s", tmp, strerror(errno));
    cache_dl c = {r, what};
    uint64_t len;
    int rc = ss__object_get_fd(&len, r, u, name, fd, cache_on_length, &c);
    int e = 0;
    if (!rc && fsync(fd) != 0) e = errno;
    if (close(fd) != 0 && !e) e = errno;
    if (!rc && e) rc = ss__rfail(cache_errno_code(e), "cache: write '%s': %s", tmp, strerror(e));
    /* the partial file is removed by the caller: say so, and where */
    if (rc == SS_EFULL)
        return ss__rcontext(rc, "cache '%s': its file system is full: %s, its partial '%s' "
                                "removed", r->cache_dir, what, tmp);
    if (!rc && (rc = v->check(v->ctx, tmp)) != 0) ss__rfail(rc, "%s", v->message());
    return rc;
}

/* Open the shard file with a shared lock: 0 and *fd, or 1 when it is not
 * there (never was, or evicted meanwhile). */
static int cache_open_final(int *fd, const char *final) {
    *fd = open(final, O_RDONLY | O_CLOEXEC);
    if (*fd < 0) return 1;
    struct stat a, b;
    if (flock(*fd, LOCK_SH) != 0 || fstat(*fd, &a) != 0 || a.st_nlink == 0 ||
        stat(final, &b) != 0 || a.st_ino != b.st_ino || a.st_dev != b.st_dev) {
        close(*fd);
        *fd = -1;
        return 1;
    }
    futimens(*fd, NULL); /* most recently used */
    return 0;
}

/* Download and check (once more after a mismatch), then rename into place;
 * under the shard's download lock. */
static int cache_fill(const ss__remote *r, const ss__url *u, const char *name, const char *tmp,
                      const char *final, const char *shards, const ss__verifier *v) {
    char *what = NULL;
    int rc = ss__url_object_shown(&what, u, name);
    if (rc) return rc;
    char label[4200];
    snprintf(label, sizeof label, "shard '%s'", what);
    for (int attempt = 1; attempt <= 2; attempt++) {
        rc = cache_download(r, u, name, tmp, label, v);
        if (rc != SS_ECORRUPT) break;
    }
    if (rc == SS_ECORRUPT)
        ss__rcontext(rc, "%s: the object differs from the manifest (fetched twice)", what);
    if (!rc && rename(tmp, final) != 0)
        rc = ss__rfail(cache_errno_code(errno), "cache: rename to '%s': %s", final,
                       strerror(errno));
    if (rc)
        unlink(tmp);
    else
        cache_sync_dir(shards);
    free(what);
    return rc;
}

int ss__cache_shard(char **path, int *fd, const ss__remote *r, const ss__url *u, const char *dsdir,
                    const char *name, uint64_t digest, const ss__verifier *v) {
    char shards[4096], final[4200], tmp[4200], lock[4200];
    *path = NULL;
    *fd = -1;
    snprintf(shards, sizeof shards, "%s/shards", dsdir);
    snprintf(final, sizeof final, "%s/%016llx.ss", shards, (unsigned long long)digest);
    snprintf(tmp, sizeof tmp, "%s/.%016llx.tmp", shards, (unsigned long long)digest);
    snprintf(lock, sizeof lock, "%s/%016llx.lock", shards, (unsigned long long)digest);
    for (int round = 0; round < 8; round++) {
        if (cache_open_final(fd, final) == 0) {
            if (!(*path = strdup(final))) {
                close(*fd), *fd = -1;
                return ss__rfail(SS_ENOMEM, "out of memory");
            }
            return 0;
        }
        int lfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
        if (lfd < 0 || flock(lfd, LOCK_EX) != 0) {
            int e = errno;
            if (lfd >= 0) close(lfd);
            return ss__rfail(cache_errno_code(e), "cache: lock '%s': %s", lock, strerror(e));
        }
        struct stat st;
        int rc = stat(final, &st) == 0 ? 0 : cache_fill(r, u, name, tmp, final, shards, v);
        close(lfd);
        if (rc) return rc;
    }
    return ss__rfail(SS_EBUSY, "cache: '%s' was evicted as often as it was fetched", final);
}
