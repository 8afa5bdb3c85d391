/* SPDX-License-Identifier: BSD-2-Clause */
/* remote_open.c - ss_open() of a URL (spec/FORMAT.md §14): the manifest and
 * the sections store fetched into the dataset's cache directory at open,
 * every shard on first use through the verified cache (remote/), checked here
 * as a store before it enters the cache. */
#include "internal.h"
#include "manifest.h"
#include "remote_impl.h"
#include "remote_dataset.h"
#include "sections.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int ss_is_url(const char *path) {
    if (!path) return 0;
    const char *e = strstr(path, "://");
    if (!e || e == path) return 0;
    for (const char *p = path; p < e; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
              (p > path && ((*p >= '0' && *p <= '9') || *p == '+' || *p == '-' || *p == '.'))))
            return 0;
    return 1;
}

/* This layer's message into the library's. */
static int remote_fail(int rc) {
    return ss__fail(rc, "%s", ss__rmessage());
}

#ifdef SS_HAVE_REMOTE

struct ss__ds_remote {
    ss__remote cfg;
    ss__url url;
    char *dsdir;
    pthread_mutex_t lock;
    int *fds; /* per shard: the cache lock of its file, or -1 */
    uint32_t nfds;
    /* prefetch (under lock): shards asked for, downloaded by cfg.parallel
     * threads started on the first request, at most qcap waiting */
    pthread_cond_t cv;
    const ss_manifest *m;
    unsigned char *asked; /* per shard: 1 once queued */
    uint32_t *queue, qhead, qlen, qcap;
    pthread_t *threads;
    unsigned nthreads;
    int stop;
};

/* A prefetch thread: download the queued shards into the cache (a failure
 * is left to the read that needs the shard, which reports it). */
static void *remote_prefetcher(void *vrm) {
    ss__ds_remote *rm = vrm;
    pthread_mutex_lock(&rm->lock);
    for (;;) {
        while (!rm->stop && !rm->qlen) pthread_cond_wait(&rm->cv, &rm->lock);
        if (rm->stop) break;
        uint32_t k = rm->queue[rm->qhead];
        rm->qhead = (rm->qhead + 1) % rm->qcap;
        rm->qlen--;
        int have = rm->fds[k] >= 0;
        pthread_mutex_unlock(&rm->lock);
        char *path = NULL;
        if (!have) ss__remote_shard(&path, rm, rm->m, k);
        free(path);
        pthread_mutex_lock(&rm->lock);
    }
    pthread_mutex_unlock(&rm->lock);
    return NULL;
}

int ss__remote_prefetch(ss__ds_remote *rm, const ss_manifest *m, uint32_t k) {
    int rc = 0;
    pthread_mutex_lock(&rm->lock);
    if (!rm->asked) {
        rm->m = m;
        rm->qcap = 2 * rm->cfg.parallel;
        rm->asked = calloc(rm->nfds ? rm->nfds : 1, 1);
        rm->queue = malloc(rm->qcap * sizeof *rm->queue);
        rm->threads = calloc(rm->cfg.parallel, sizeof *rm->threads);
        if (!rm->asked || !rm->queue || !rm->threads) rc = ss__fail(SS_ENOMEM, "out of memory");
        for (unsigned t = 0; !rc && t < rm->cfg.parallel; t++, rm->nthreads++)
            if (pthread_create(&rm->threads[t], NULL, remote_prefetcher, rm) != 0) break;
    }
    /* bounded: a full queue drops the request (the read fetches it then) */
    if (!rc && k < rm->nfds && !rm->asked[k] && rm->fds[k] < 0 && rm->qlen < rm->qcap) {
        rm->asked[k] = 1;
        rm->queue[(rm->qhead + rm->qlen++) % rm->qcap] = k;
        pthread_cond_signal(&rm->cv);
    }
    pthread_mutex_unlock(&rm->lock);
    return rc;
}

void ss__remote_ds_free(ss__ds_remote *rm) {
    if (!rm) return;
    pthread_mutex_lock(&rm->lock);
    rm->stop = 1;
    pthread_cond_broadcast(&rm->cv);
    pthread_mutex_unlock(&rm->lock);
    for (unsigned t = 0; t < rm->nthreads; t++) pthread_join(rm->threads[t], NULL);
    free(rm->threads);
    free(rm->queue);
    free(rm->asked);
    pthread_cond_destroy(&rm->cv);
    for (uint32_t k = 0; k < rm->nfds; k++)
        if (rm->fds[k] >= 0) close(rm->fds[k]);
    free(rm->fds);
    free(rm->dsdir);
    ss__url_free(&rm->url);
    ss__remote_config_free(&rm->cfg);
    pthread_mutex_destroy(&rm->lock);
    free(rm);
}

typedef struct shard_check {
    const ss_manifest *m;
    uint32_t k;
} shard_check;

/* A downloaded shard is what the manifest describes: a complete store of its
 * schema, count, rows and header digest (which binds the content digest,
 * §13), whose every block matches its checksum and whose content digest
 * matches its blocks (ss_verify). Wrong bytes are SS_ECORRUPT. */
static int remote_check_shard(void *vctx, const char *tmp) {
    shard_check *c = vctx;
    ss_store *sh = NULL;
    int rc = ss__open_shard(&sh, tmp, SS_OPEN_NOLOCK);
    if (!rc) rc = ss__manifest_check_shard(c->m, c->k, sh);
    if (!rc) rc = ss_verify(NULL, sh, NULL, NULL);
    ss_close(sh);
    if (rc == SS_ESCHEMA || rc == SS_ENOTSTORE || rc == SS_EINCOMPLETE || rc == SS_EVERSION)
        rc = ss__fail(SS_ECORRUPT, "%s", ss_error_message());
    return rc;
}

int ss__remote_shard(char **path, ss__ds_remote *rm, const ss_manifest *m, uint32_t k) {
    shard_check c = {m, k};
    ss__verifier v = {remote_check_shard, ss_error_message, &c};
    int fd;
    int rc = ss__cache_shard(path, &fd, &rm->cfg, &rm->url, rm->dsdir, m->shards[k].path,
                             m->shards[k].digest, &v);
    if (rc) return remote_fail(rc);
    pthread_mutex_lock(&rm->lock);
    if (k < rm->nfds && rm->fds[k] < 0)
        rm->fds[k] = fd, fd = -1;
    pthread_mutex_unlock(&rm->lock);
    if (fd >= 0) close(fd); /* another thread's lock holds it already */
    return 0;
}

/* The manifest (checked: it is parsed) and the sections store into the
 * cache directory. */
static int remote_fetch_head(ss__ds_remote *rm, uint32_t *nshards) {
    char *text = NULL;
    size_t len = 0;
    int rc = ss__object_get_mem(&text, &len, &rm->cfg, &rm->url, SS_MANIFEST_NAME,
                                SS_MANIFEST_MAX_BYTES);
    if (rc == SS_ENOTFOUND)
        ss__rcontext(rc, "no dataset there (its " SS_MANIFEST_NAME " is missing)");
    if (rc) return remote_fail(rc);
    ss_manifest m;
    rc = ss__manifest_parse(&m, text, len);
    if (rc) {
        free(text);
        return ss__context(rc, "manifest '%s/" SS_MANIFEST_NAME "'", rm->url.shown);
    }
    *nshards = m.nshards;
    ss__manifest_free(&m);
    rc = ss__cache_write_file(rm->dsdir, SS_MANIFEST_NAME, text, len);
    free(text);
    if (!rc) rc = ss__cache_fetch_file(&rm->cfg, &rm->url, SS_SECTIONS_NAME, rm->dsdir,
                                       SS_SECTIONS_NAME);
    if (rc == SS_ENOTFOUND) rc = 0; /* a dataset without sections (§13.1) */
    return rc ? remote_fail(rc) : 0;
}

static int remote_open(ss_store **out, ss__url *u, unsigned flags,
                       const ss_remote_options *opts) {
    char shown[4096];
    snprintf(shown, sizeof shown, "%s", u->shown);
    ss__ds_remote *rm = calloc(1, sizeof *rm);
    if (!rm) {
        ss__url_free(u);
        return ss__fail(SS_ENOMEM, "out of memory");
    }
    pthread_mutex_init(&rm->lock, NULL);
    pthread_cond_init(&rm->cv, NULL);
    rm->url = *u;
    int rc = ss__remote_config(&rm->cfg, opts);
    if (!rc) rc = ss__cache_dataset_dir(&rm->dsdir, &rm->cfg, &rm->url);
    if (rc) rc = remote_fail(rc);
    uint32_t n = 0;
    if (!rc) rc = remote_fetch_head(rm, &n);
    if (!rc && !(rm->fds = malloc((n ? n : 1) * sizeof *rm->fds)))
        rc = ss__fail(SS_ENOMEM, "out of memory");
    if (rc) {
        ss__remote_ds_free(rm);
        return ss__context(rc, "open '%s'", shown);
    }
    rm->nfds = n;
    for (uint32_t k = 0; k < n; k++) rm->fds[k] = -1;
    char *dir = strdup(rm->dsdir);
    if (!dir) return ss__remote_ds_free(rm), ss__fail(SS_ENOMEM, "out of memory");
    rc = ss__dataset_open_at(out, dir, shown, flags, rm);
    free(dir);
    return rc;
}

#else

void ss__remote_ds_free(ss__ds_remote *rm) {
    (void)rm;
}

int ss__remote_shard(char **path, ss__ds_remote *rm, const ss_manifest *m, uint32_t k) {
    (void)rm, (void)m, (void)k;
    *path = NULL;
    return ss__fail(SS_EINVAL, "remote datasets are not built in");
}

int ss__remote_prefetch(ss__ds_remote *rm, const ss_manifest *m, uint32_t k) {
    (void)rm, (void)m, (void)k;
    return 0;
}

#endif

int ss_remote_options_init(ss_remote_options *out, unsigned version) {
    if (!out) return ss__fail(SS_EINVAL, "ss_remote_options_init: out is NULL");
    if (version != SS_REMOTE_OPTIONS_VERSION)
        return ss__fail(SS_EINVAL, "ss_remote_options_init: version %u is not %u", version,
                        (unsigned)SS_REMOTE_OPTIONS_VERSION);
    static const ss_remote_options defaults = SS_REMOTE_OPTIONS_INIT;
    memcpy(out, &defaults, sizeof *out);
    return 0;
}

int ss_open_url(ss_store **out, const char *url, unsigned flags, const ss_remote_options *opts) {
    if (!out) return ss__fail(SS_EINVAL, "ss_open_url: out is NULL");
    *out = NULL;
    if (!ss_is_url(url)) return ss__fail(SS_EINVAL, "ss_open_url: '%s' is not a URL", url ? url : "(null)");
    if (opts && opts->version != SS_REMOTE_OPTIONS_VERSION)
        return ss__fail(SS_EINVAL, "ss_open_url: ss_remote_options version %u is not %u",
                        opts->version, (unsigned)SS_REMOTE_OPTIONS_VERSION);
    ss__url u;
    if (ss__url_parse(&u, url)) return remote_fail(SS_EINVAL);
    if (u.scheme == SS__URL_FILE) {
        int rc = ss_open(out, u.base, flags);
        ss__url_free(&u);
        return rc;
    }
#ifdef SS_HAVE_REMOTE
    return remote_open(out, &u, flags, opts); /* takes u */
#else
    int rc = ss__fail(SS_EINVAL,
                      "open '%s': this library was built without remote datasets "
                      "(cmake -DSS_REMOTE=ON, which needs libcurl and expat)",
                      u.shown);
    ss__url_free(&u);
    return rc;
#endif
}
