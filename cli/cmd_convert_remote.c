/* SPDX-License-Identifier: BSD-2-Clause */
/* cmd_convert_remote.c - `seqstore convert ... -o s3://BUCKET/PREFIX/NAME.ss`:
 * a shard converted into a local scratch directory, verified there and then
 * uploaded (spec/FORMAT.md §14). The local file stays: a --resume continues
 * or skips it, and `seqstore dataset build URL --scratch DIR` builds the
 * manifest from the scratch directory once every shard is uploaded, writing
 * the manifest last. Nothing unverified is uploaded, and the dataset's
 * manifest is deleted before a shard object is written, so that no reader
 * finds a manifest over a mix of old and new shards. */
#include "commands.h"
#include "conv_impl.h"
#include "manifest.h"
#include "remote_cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct ss__url_output {
    ss__url u;       /* the dataset: the URL without /NAME.ss */
    ss__remote r;
    char *name;      /* NAME.ss, the object under u */
    char *local;     /* SCRATCH/NAME.ss */
    char *shown;     /* the shard's URL as messages show it */
    int resume, quiet;
};

const char *ss__cli_scratch_dir(const char *given) {
    if (given && *given) return given;
    const char *env = getenv("SEQSTORE_SCRATCH_DIR");
    return env && *env ? env : NULL;
}

static void url_output_free(ss__url_output *o) {
    if (!o) return;
    ss__url_free(&o->u);
    ss__remote_config_free(&o->r);
    free(o->name);
    free(o->local);
    free(o->shown);
    free(o);
}

/* mkdir -p `dir`. */
static int make_dirs(const char *dir) {
    char *p = strdup(dir);
    int rc = p ? 0 : -1;
    for (char *s = p ? p + 1 : NULL; s && *s && !rc; s++)
        if (*s == '/') {
            *s = '\0';
            if (mkdir(p, 0777) != 0 && errno != EEXIST) rc = -1;
            *s = '/';
        }
    if (!rc && mkdir(p, 0777) != 0 && errno != EEXIST) rc = -1;
    free(p);
    return rc;
}

int ss__convert_url_begin(ss__url_output **out, int *skip, ss_conv *c, const char *url,
                          const char *scratch_opt) {
    *out = NULL;
    *skip = 0;
    const char *scratch = ss__cli_scratch_dir(scratch_opt);
    const char *slash = strrchr(url, '/'), *q = strchr(url, '?');
    if (q)
        return ss__conv_usage_error(c, "-o: a URL to write has no query string (s3://BUCKET/"
                                       "PREFIX/NAME.ss, credentials from the environment)");
    if (strncmp(url, "s3://", 5))
        return ss__conv_usage_error(c, "-o %s: only s3:// URLs can be written (http(s) is read "
                                       "only; for file:// give the path)", url);
    if (!slash || slash < url + 5 || strlen(slash) < 5 || strcmp(url + strlen(url) - 3, ".ss") ||
        !strchr(url + 5, '/'))
        return ss__conv_usage_error(c, "-o %s: a URL output names a shard: s3://BUCKET/PREFIX/"
                                       "NAME.ss (the dataset is s3://BUCKET/PREFIX)", url);
    if (!scratch)
        return ss__conv_usage_error(c, "-o %s: a URL output needs --scratch DIR (or "
                                       "SEQSTORE_SCRATCH_DIR): the local directory where the "
                                       "shard is written and verified before its upload", url);
    if (c->opts.append)
        return ss__conv_usage_error(c, "-o %s: a URL output is a new shard; it excludes --append",
                                    url);
    ss__url_output *o = calloc(1, sizeof *o);
    char *ds = o ? strndup(url, (size_t)(slash - url)) : NULL;
    if (!ds) return free(o), fputs("seqstore convert: out of memory\n", stderr), SS_EXIT_ERROR;
    o->resume = c->opts.resume, o->quiet = c->opts.quiet;
    int rc = ss__url_parse(&o->u, ds);
    if (!rc) rc = ss__remote_config(&o->r, NULL);
    free(ds);
    if (rc) {
        fprintf(stderr, "seqstore convert: -o %s: %s\n", url, ss__rmessage());
        return url_output_free(o), SS_EXIT_ERROR;
    }
    o->name = strdup(slash + 1);
    if (!o->name || asprintf(&o->local, "%s/%s", scratch, o->name) < 0 ||
        ss__url_object_shown(&o->shown, &o->u, o->name)) {
        o->local = NULL;
        fputs("seqstore convert: out of memory\n", stderr);
        return url_output_free(o), SS_EXIT_ERROR;
    }
    if (make_dirs(scratch)) {
        fprintf(stderr, "seqstore convert: --scratch '%s': %s\n", scratch, strerror(errno));
        return url_output_free(o), SS_EXIT_ERROR;
    }
    c->opts.output = o->local;
    struct stat st;
    if (c->opts.resume && stat(o->local, &st) != 0) {
        c->opts.resume = 0; /* nothing was written yet: a new conversion */
    } else if (c->opts.resume) {
        ss_store *s = NULL;
        if (ss_open(&s, o->local, SS_OPEN_NOLOCK) == 0) *skip = 1; /* complete already */
        ss_close(s);
        if (!*skip) c->opts.append = ss__conv_probe_interrupted_append(c);
    }
    *out = o;
    return 0;
}

/* Every block of the local shard matches its checksum and the content
 * digest; `*digest` its header digest. An exit code (printed). */
static int check_local(const ss__url_output *o, uint64_t *digest) {
    ss_store *s = NULL;
    uint64_t problems = 0;
    int rc = ss_open(&s, o->local, SS_OPEN_NOLOCK | SS_OPEN_VERIFY);
    if (!rc) rc = ss_verify(&problems, s, NULL, NULL);
    if (!rc) rc = ss__store_header_digest(digest, s);
    ss_close(s);
    if (!rc) return 0;
    fprintf(stderr, "seqstore convert: '%s' (for %s): %s; nothing uploaded\n", o->local,
            o->shown, ss_error_message());
    return rc == SS_ECORRUPT ? SS_EXIT_CORRUPT : SS_EXIT_ERROR;
}

int ss__convert_url_end(ss__url_output *o, int rc) {
    uint64_t digest = 0;
    struct stat st;
    if (!rc) rc = check_local(o, &digest);
    if (!rc && stat(o->local, &st) != 0) {
        fprintf(stderr, "seqstore convert: '%s': %s\n", o->local, strerror(errno));
        rc = SS_EXIT_ERROR;
    }
    int current = 0, e = 0;
    if (!rc && o->resume)
        e = ss__cli_object_current(&current, &o->r, &o->u, o->name, (uint64_t)st.st_size, digest);
    if (!rc && !e && !current) {
        e = ss__object_delete(&o->r, &o->u, SS_MANIFEST_NAME);
        if (!e) e = ss__cli_put_shard(&o->r, &o->u, o->name, o->local, digest);
    }
    if (e) {
        fprintf(stderr, "seqstore convert: upload of '%s' to %s: %s\n", o->local, o->shown,
                ss__rmessage());
        rc = SS_EXIT_ERROR;
    }
    if (!rc && !o->quiet)
        printf("%s: %s (%llu bytes, verified in '%s')\n", o->shown,
               current ? "already uploaded" : "uploaded", (unsigned long long)st.st_size,
               o->local);
    url_output_free(o);
    return rc;
}
