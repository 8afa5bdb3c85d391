/* SPDX-License-Identifier: BSD-2-Clause */
/* cmd_dataset_remote.c - `seqstore dataset push DIR URL` and `seqstore
 * dataset pull URL DIR`: a whole dataset to and from object storage
 * (spec/FORMAT.md §14). push uploads the shards and the sections store first
 * and the manifest last (after deleting the old one), so a reader finds no
 * manifest or a complete dataset; pull writes each shard under a temporary
 * name, checks it against the manifest and renames it, the manifest last. */
#include "commands.h"
#include "manifest.h"
#include "remote_cli.h"
#include "sections.h"
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void usage(void) {
    printf("usage: seqstore dataset push DIR URL [--resume] [--parallel N]\n"
           "       seqstore dataset pull URL DIR [--resume] [--parallel N]\n\n"
           "push: check every shard of the dataset DIR against its manifest, then upload\n"
           "it to URL (s3://BUCKET/PREFIX): the old manifest is deleted first, the shards\n"
           "(in parts when large, N at once) and " SS_SECTIONS_NAME " next, the manifest\n"
           "last, so a reader sees no dataset or a complete one.\n"
           "pull: download the dataset under URL (s3://, http://, https://) into DIR, each\n"
           "shard checked against the manifest before it is renamed into place, the\n"
           "manifest last.\n"
           "  --resume      skip what is already there: push, objects of the shard's size and\n"
           "                header digest; pull, files that match the manifest\n"
           "  --parallel N  transfers at once (default: 8)\n"
           "Credentials, region and endpoint: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,\n"
           "AWS_SESSION_TOKEN, AWS_REGION, AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL, AWS_PROFILE\n"
           "with ~/.aws/credentials and ~/.aws/config.\n"
           "exit codes: 0 ok, 1 error, 2 usage error, 3 a shard is corrupt\n");
}

typedef struct xfer {
    const ss__remote *r;
    const ss__url *u;
    const ss_manifest *m;
    const char *dir;
    int resume;
    atomic_uint_fast64_t bytes, done, skipped;
} xfer;

/* The header digest as objects carry it (x-amz-meta-seqstore-digest). */
static void digest_hex(char out[17], uint64_t d) {
    snprintf(out, 17, "%016llx", (unsigned long long)d);
}

int ss__cli_object_current(int *current, const ss__remote *r, const ss__url *u,
                           const char *name, uint64_t size, uint64_t digest) {
    char hex[17], meta[80];
    int found;
    uint64_t have;
    digest_hex(hex, digest);
    *current = 0;
    int rc = ss__object_head(&found, &have, meta, sizeof meta, r, u, name);
    if (!rc) *current = found && have == size && !strcmp(meta, hex);
    return rc;
}

int ss__cli_put_shard(const ss__remote *r, const ss__url *u, const char *name, const char *path,
                      uint64_t digest) {
    char hex[17];
    digest_hex(hex, digest);
    return ss__object_put_file(r, u, name, path, hex);
}

static int push_shard(void *vctx, size_t i) {
    xfer *x = vctx;
    const ss_manifest_shard *sh = &x->m->shards[i];
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", x->dir, sh->path);
    struct stat st;
    if (stat(path, &st) != 0)
        return ss__rfail(SS_EIO, "shard '%s': %s", path, strerror(errno));
    if (x->resume) {
        int current;
        int rc = ss__cli_object_current(&current, x->r, x->u, sh->path, (uint64_t)st.st_size,
                                        sh->digest);
        if (rc) return rc;
        if (current) {
            x->skipped++;
            return 0;
        }
    }
    int rc = ss__cli_put_shard(x->r, x->u, sh->path, path, sh->digest);
    if (!rc) {
        x->bytes += (uint64_t)st.st_size;
        x->done++;
    }
    return rc;
}

/* Every shard of the local dataset is the one its manifest names. */
static int push_check(const char *dir, const ss_manifest *m) {
    for (uint32_t k = 0; k < m->nshards; k++) {
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, m->shards[k].path);
        ss_store *s = NULL;
        int rc = ss__open_shard(&s, path, SS_OPEN_NOLOCK);
        if (!rc) rc = ss__manifest_check_shard(m, k, s);
        ss_close(s);
        if (rc) return rc == SS_ECORRUPT || rc == SS_ESCHEMA ? SS_EXIT_CORRUPT : SS_EXIT_ERROR;
    }
    return 0;
}

static int remote_error(const char *what) {
    fprintf(stderr, "seqstore dataset: %s: %s\n", what, ss__rmessage());
    return SS_EXIT_ERROR;
}

int ss__cli_push(const char *dir, const char *url, int resume, unsigned parallel) {
    ss_manifest m;
    if (ss__manifest_read(&m, dir)) return ss__cli_store_error("dataset", "push %s", dir);
    int rc = push_check(dir, &m);
    if (rc) {
        ss__manifest_free(&m);
        return ss__cli_store_error("dataset", "push %s", dir), rc;
    }
    ss__url u;
    ss__remote r;
    ss_remote_options o = SS_REMOTE_OPTIONS_INIT;
    o.parallel = parallel;
    if (ss__url_parse(&u, url)) return ss__manifest_free(&m), remote_error("push");
    if (ss__remote_config(&r, &o)) {
        ss__url_free(&u), ss__manifest_free(&m);
        return remote_error("push");
    }
    char *text = NULL;
    size_t len = 0;
    xfer x = {&r, &u, &m, dir, resume, 0, 0, 0};
    char sections[8192];
    snprintf(sections, sizeof sections, "%s/" SS_SECTIONS_NAME, dir);
    struct stat st;
    int err = ss__manifest_format(&m, &text, &len);
    if (err) rc = ss__cli_store_error("dataset", "push %s", dir);
    /* also with --resume: the sections store is written again, and a reader
     * of the old manifest must find no dataset rather than a mix */
    if (!rc && ss__object_delete(&r, &u, SS_MANIFEST_NAME)) rc = remote_error("push");
    if (!rc && ss__parallel(r.parallel, m.nshards, push_shard, &x)) rc = remote_error("push");
    if (!rc && stat(sections, &st) == 0 &&
        ss__object_put_file(&r, &u, SS_SECTIONS_NAME, sections, NULL))
        rc = remote_error("push");
    if (!rc && ss__object_put_mem(&r, &u, SS_MANIFEST_NAME, text, len)) rc = remote_error("push");
    if (!rc)
        printf("%s: pushed %llu shards (%llu bytes), %llu already there, and the manifest\n",
               u.shown, (unsigned long long)x.done, (unsigned long long)x.bytes,
               (unsigned long long)x.skipped);
    free(text);
    ss__remote_config_free(&r);
    ss__url_free(&u);
    ss__manifest_free(&m);
    return rc;
}

/* mkdir -p of the directories of `path` below the dataset. */
static int pull_mkdirs(const char *path) {
    char p[8192];
    snprintf(p, sizeof p, "%s", path);
    for (char *s = p + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            if (mkdir(p, 0777) != 0 && errno != EEXIST)
                return ss__rfail(SS_EIO, "mkdir '%s': %s", p, strerror(errno));
            *s = '/';
        }
    return 0;
}

/* Is the file `path` shard k as the manifest describes it (open, match, verify)? */
static int pull_good(const xfer *x, uint32_t k, const char *path, int full) {
    ss_store *s = NULL;
    int rc = ss__open_shard(&s, path, SS_OPEN_NOLOCK);
    if (!rc) rc = ss__manifest_check_shard(x->m, k, s);
    if (!rc && full) rc = ss_verify(NULL, s, NULL, NULL);
    ss_close(s);
    return rc;
}

static int pull_shard(void *vctx, size_t i) {
    xfer *x = vctx;
    const ss_manifest_shard *sh = &x->m->shards[i];
    char path[8192], tmp[8300];
    snprintf(path, sizeof path, "%s/%s", x->dir, sh->path);
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    if (x->resume && access(path, F_OK) == 0 && pull_good(x, (uint32_t)i, path, 0) == 0) {
        x->skipped++;
        return 0;
    }
    int rc = pull_mkdirs(path);
    for (int attempt = 1; !rc && attempt <= 2; attempt++) {
        int fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
        if (fd < 0) return ss__rfail(SS_EIO, "create '%s': %s", tmp, strerror(errno));
        uint64_t len = 0;
        rc = ss__object_get_fd(&len, x->r, x->u, sh->path, fd, NULL, NULL);
        if (!rc && fsync(fd) != 0) rc = ss__rfail(SS_EIO, "write '%s': %s", tmp, strerror(errno));
        close(fd);
        if (!rc && (rc = pull_good(x, (uint32_t)i, tmp, 1)) != 0) {
            ss__rfail(rc, "shard %zu '%s': %s", i, sh->path, ss_error_message());
            if (rc == SS_ECORRUPT || rc == SS_ESCHEMA || rc == SS_ENOTSTORE) {
                rc = SS_ECORRUPT;
                if (attempt == 1) rc = 0;
                else break;
                continue;
            }
        }
        if (!rc && rename(tmp, path) != 0) rc = ss__rfail(SS_EIO, "rename '%s': %s", tmp,
                                                           strerror(errno));
        if (!rc) {
            x->bytes += len;
            x->done++;
        }
        break;
    }
    if (rc) unlink(tmp);
    return rc;
}

/* `dataset build URL SHARD... --scratch DIR`: the named shards that DIR
 * lacks (written on another node) come from their objects. */
typedef struct fetch_job {
    const ss__remote *r;
    const ss__url *u;
    const char *dir;
    char *const *names;
    atomic_uint_fast64_t fetched;
} fetch_job;

static int fetch_shard(void *vctx, size_t i) {
    fetch_job *f = vctx;
    const char *name = f->names[i];
    char path[8192], tmp[8300], meta[80];
    snprintf(path, sizeof path, "%s/%s", f->dir, name);
    if (access(path, F_OK) == 0) return 0;
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    int found;
    uint64_t size;
    int rc = ss__object_head(&found, &size, meta, sizeof meta, f->r, f->u, name);
    if (!rc && !found)
        rc = ss__rfail(SS_ENOTFOUND, "shard '%s' is neither in '%s' nor under %s", name, f->dir,
                       f->u->shown);
    if (!rc) rc = pull_mkdirs(path);
    int fd = rc ? -1 : open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (!rc && fd < 0) rc = ss__rfail(SS_EIO, "create '%s': %s", tmp, strerror(errno));
    uint64_t len = 0;
    if (!rc) rc = ss__object_get_fd(&len, f->r, f->u, name, fd, NULL, NULL);
    if (!rc && fsync(fd) != 0) rc = ss__rfail(SS_EIO, "write '%s': %s", tmp, strerror(errno));
    if (fd >= 0) close(fd);
    /* the object is the shard its converter uploaded: its header digest is
     * the one the upload recorded (the manifest is built from it) */
    ss_store *s = NULL;
    uint64_t digest = 0;
    char hex[17];
    if (!rc && (ss__open_shard(&s, tmp, SS_OPEN_NOLOCK) || ss__store_header_digest(&digest, s)))
        rc = ss__rfail(SS_ECORRUPT, "shard '%s' from %s: %s", name, f->u->shown,
                       ss_error_message());
    ss_close(s);
    digest_hex(hex, digest);
    if (!rc && *meta && strcmp(meta, hex))
        rc = ss__rfail(SS_ECORRUPT, "shard '%s' from %s: header digest %s, uploaded as %s", name,
                       f->u->shown, hex, meta);
    if (!rc && rename(tmp, path) != 0)
        rc = ss__rfail(SS_EIO, "rename '%s': %s", tmp, strerror(errno));
    if (rc) unlink(tmp);
    else f->fetched++;
    return rc;
}

int ss__cli_fetch_missing(const char *dir, const char *url, char *const *names, size_t n) {
    ss__url u;
    ss__remote r;
    if (ss__url_parse(&u, url)) return remote_error("build");
    if (ss__remote_config(&r, NULL)) return ss__url_free(&u), remote_error("build");
    fetch_job f = {&r, &u, dir, names, 0};
    int rc = ss__parallel(r.parallel, n, fetch_shard, &f) ? remote_error("build") : 0;
    if (!rc && f.fetched)
        printf("%s: fetched %llu shards that '%s' did not hold\n", u.shown,
               (unsigned long long)f.fetched, dir);
    ss__remote_config_free(&r);
    ss__url_free(&u);
    return rc;
}

static int do_pull(const char *url, const char *dir, int resume, unsigned parallel) {
    ss__url u;
    ss__remote r;
    ss_remote_options o = SS_REMOTE_OPTIONS_INIT;
    o.parallel = parallel;
    if (ss__url_parse(&u, url)) return remote_error("pull");
    if (ss__remote_config(&r, &o)) return ss__url_free(&u), remote_error("pull");
    char *text = NULL;
    size_t len = 0;
    ss_manifest m = {0};
    int rc = 0;
    if (ss__object_get_mem(&text, &len, &r, &u, SS_MANIFEST_NAME, SS_MANIFEST_MAX_BYTES))
        rc = remote_error("pull");
    if (!rc && ss__manifest_parse(&m, text, len)) {
        fprintf(stderr, "seqstore dataset: pull: manifest '%s/" SS_MANIFEST_NAME "': %s\n",
                u.shown, ss_error_message());
        rc = SS_EXIT_ERROR;
    }
    if (!rc && mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "seqstore dataset: pull: mkdir '%s': %s\n", dir, strerror(errno));
        rc = SS_EXIT_ERROR;
    }
    xfer x = {&r, &u, &m, dir, resume, 0, 0, 0};
    if (!rc) {
        int e = ss__parallel(r.parallel, m.nshards, pull_shard, &x);
        if (e) rc = remote_error("pull"), rc = e == SS_ECORRUPT ? SS_EXIT_CORRUPT : rc;
    }
    if (!rc) {
        int e = ss__cache_fetch_file(&r, &u, SS_SECTIONS_NAME, dir, SS_SECTIONS_NAME);
        if (e && e != SS_ENOTFOUND) rc = remote_error("pull");
    }
    if (!rc && ss__cache_write_file(dir, SS_MANIFEST_NAME, text, len)) rc = remote_error("pull");
    if (!rc)
        printf("%s: pulled %llu shards (%llu bytes), %llu already there, and the manifest\n", dir,
               (unsigned long long)x.done, (unsigned long long)x.bytes,
               (unsigned long long)x.skipped);
    free(text);
    ss__manifest_free(&m);
    ss__remote_config_free(&r);
    ss__url_free(&u);
    return rc;
}

int ss__cmd_dataset_remote(int argc, char **argv) {
    static const struct option longopts[] = {{"resume", no_argument, 0, 'r'},
                                             {"parallel", required_argument, 0, 'p'},
                                             {"help", no_argument, 0, 'h'},
                                             {0, 0, 0, 0}};
    int resume = 0, c;
    uint64_t parallel = 8;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (c == 'r')
            resume = 1;
        else if (c == 'p') {
            int rc = ss__cli_number("dataset", "--parallel", optarg, 1, 256, &parallel);
            if (rc) return rc;
        } else if (c == 'h') {
            usage();
            return SS_EXIT_OK;
        } else
            return ss__cli_bad_option("dataset", c, argv);
    }
    int push = !strcmp(argv[0], "push");
    if (argc - optind != 2)
        return ss__cli_usage_error("dataset", push ? "expected: push DIR URL"
                                                   : "expected: pull URL DIR");
    return push ? ss__cli_push(argv[optind], argv[optind + 1], resume, (unsigned)parallel)
                : do_pull(argv[optind], argv[optind + 1], resume, (unsigned)parallel);
}
