/* SPDX-License-Identifier: BSD-2-Clause */
/* config.c - ss_remote_options and the environment, resolved. */
#include "remote_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SS_REMOTE_DEFAULT_CACHE_BYTES (64ull << 30)
#define SS_REMOTE_MIN_PART (5ull << 20)

static int config_cache_dir(char **out, const char *opt) {
    const char *v = opt && *opt ? opt : getenv("SEQSTORE_CACHE_DIR");
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n = -1;
    if (v && *v)
        n = asprintf(out, "%s", v);
    else if (xdg && *xdg)
        n = asprintf(out, "%s/seqstore", xdg);
    else if (home && *home)
        n = asprintf(out, "%s/.cache/seqstore", home);
    else
        return *out = NULL, ss__rfail(SS_EINVAL, "no cache directory: set SEQSTORE_CACHE_DIR "
                                                 "(or HOME), or the cache_dir option");
    if (n < 0) return *out = NULL, ss__rfail(SS_ENOMEM, "out of memory");
    return 0;
}

/* SEQSTORE_CACHE_BYTES: a decimal count with an optional K, M, G or T (1024s). */
static int config_bytes(uint64_t *out, const char *v) {
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    unsigned shift = 0;
    if (*end == 'K') shift = 10, end++;
    else if (*end == 'M') shift = 20, end++;
    else if (*end == 'G') shift = 30, end++;
    else if (*end == 'T') shift = 40, end++;
    if (end == v || *end || v[0] == '-' || errno || n == 0 || (n << shift) >> shift != n)
        return ss__rfail(SS_EINVAL,
                         "'%s': expected a positive byte count (optionally with K, M, G or T) "
                         "in SEQSTORE_CACHE_BYTES or SEQSTORE_MULTIPART_BYTES",
                         v);
    *out = n << shift;
    return 0;
}

/* An unsigned option's default from the environment variable `env`
 * (decimal, 1 ..= UINT_MAX), else `dflt`. */
static int config_env_unsigned(unsigned *out, unsigned opt, const char *env, unsigned dflt) {
    const char *v = getenv(env);
    *out = opt ? opt : dflt;
    if (opt || !v || !*v) return 0;
    char *end;
    errno = 0;
    unsigned long n = strtoul(v, &end, 10);
    if (end == v || *end || v[0] == '-' || errno || n == 0 || n > 0xffffffffu)
        return ss__rfail(SS_EINVAL, "%s '%s': expected a positive integer", env, v);
    *out = (unsigned)n;
    return 0;
}

int ss__remote_config(ss__remote *out, const ss_remote_options *o) {
    static const ss_remote_options defaults = SS_REMOTE_OPTIONS_INIT;
    memset(out, 0, sizeof *out);
    if (!o) o = &defaults;
    if (o->version != SS_REMOTE_OPTIONS_VERSION)
        return ss__rfail(SS_EINVAL, "ss_remote_options: version %u is not %u", o->version,
                         (unsigned)SS_REMOTE_OPTIONS_VERSION);
    if (o->multipart_bytes && o->multipart_bytes < SS_REMOTE_MIN_PART)
        return ss__rfail(SS_EINVAL,
                         "ss_remote_options: multipart_bytes %llu is below S3's least part "
                         "(5 MiB)",
                         (unsigned long long)o->multipart_bytes);
    if (o->stall_timeout_ms && o->stall_timeout_ms < 1000)
        return ss__rfail(SS_EINVAL, "ss_remote_options: stall_timeout_ms %u is below 1000",
                         o->stall_timeout_ms);
    int rc = config_cache_dir(&out->cache_dir, o->cache_dir);
    const char *cb = getenv("SEQSTORE_CACHE_BYTES");
    out->cache_bytes = o->cache_bytes ? o->cache_bytes : SS_REMOTE_DEFAULT_CACHE_BYTES;
    if (!rc && !o->cache_bytes && cb && *cb) rc = config_bytes(&out->cache_bytes, cb);
    if (!rc) rc = config_env_unsigned(&out->parallel, o->parallel, "SEQSTORE_PARALLEL", 8);
    if (!rc) rc = config_env_unsigned(&out->attempts, o->attempts, "SEQSTORE_ATTEMPTS", 5);
    if (!rc) rc = config_env_unsigned(&out->backoff_ms, o->backoff_ms, "SEQSTORE_BACKOFF_MS", 200);
    if (!rc)
        rc = config_env_unsigned(&out->connect_ms, o->connect_timeout_ms,
                                 "SEQSTORE_CONNECT_TIMEOUT_MS", 10000);
    if (!rc)
        rc = config_env_unsigned(&out->stall_ms, o->stall_timeout_ms,
                                 "SEQSTORE_STALL_TIMEOUT_MS", 30000);
    if (!rc && out->stall_ms < 1000)
        rc = ss__rfail(SS_EINVAL, "SEQSTORE_STALL_TIMEOUT_MS %u is below 1000", out->stall_ms);
    const char *mp = getenv("SEQSTORE_MULTIPART_BYTES");
    out->part_bytes = o->multipart_bytes ? o->multipart_bytes : 64ull << 20;
    if (!rc && !o->multipart_bytes && mp && *mp) {
        rc = config_bytes(&out->part_bytes, mp);
        if (!rc && out->part_bytes < SS_REMOTE_MIN_PART)
            rc = ss__rfail(SS_EINVAL, "SEQSTORE_MULTIPART_BYTES '%s' is below S3's least part "
                                      "(5 MiB)", mp);
    }
    if (!rc) rc = ss__aws_resolve(&out->aws, o->profile, o->region, o->endpoint);
    if (rc) ss__remote_config_free(out);
    return rc;
}

void ss__remote_config_free(ss__remote *r) {
    free(r->cache_dir);
    ss__aws_free(&r->aws);
    memset(r, 0, sizeof *r);
}
