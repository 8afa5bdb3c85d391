/* SPDX-License-Identifier: BSD-2-Clause */
/* awsconf.c - credentials, region and endpoint as AWS's tools find them:
 * the environment, then the profile's sections of ~/.aws/credentials and
 * ~/.aws/config (INI files, read here: no Debian library parses their
 * dialect, with its nested blocks and its "profile NAME" sections). */
#include "remote_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int ini_space(char c) {
    return c == ' ' || c == '\t' || c == '\r';
}

/* [b, e) without surrounding blanks. */
static void ini_strip(const char **b, const char **e) {
    while (*b < *e && ini_space(**b)) ++*b;
    while (*e > *b && ini_space((*e)[-1])) --*e;
}

static int ini_scan(char **out, const char *text, size_t len, const char *section,
                    const char *key) {
    const char *p = text, *end = text + len;
    int in = 0; /* inside the wanted section */
    size_t sl = strlen(section), kl = strlen(key);
    for (unsigned line = 1; p < end; line++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *e = nl ? nl : end, *b = p;
        p = nl ? nl + 1 : end;
        if (memchr(b, '\0', (size_t)(e - b)))
            return ss__rfail(SS_ECORRUPT, "line %u: a NUL byte", line);
        if (b < e && ini_space(*b)) continue; /* a nested block's line */
        ini_strip(&b, &e);
        if (b == e || *b == '#' || *b == ';') continue;
        if (*b == '[') {
            if (e[-1] != ']' || e - b < 2)
                return ss__rfail(SS_ECORRUPT, "line %u: a section header without ']'", line);
            const char *sb = b + 1, *se = e - 1;
            ini_strip(&sb, &se);
            in = (size_t)(se - sb) == sl && !memcmp(sb, section, sl);
            continue;
        }
        const char *eq = memchr(b, '=', (size_t)(e - b));
        if (!eq) return ss__rfail(SS_ECORRUPT, "line %u: expected 'key = value'", line);
        if (!in) continue;
        const char *kb = b, *ke = eq, *vb = eq + 1, *ve = e;
        ini_strip(&kb, &ke);
        ini_strip(&vb, &ve);
        if ((size_t)(ke - kb) != kl || memcmp(kb, key, kl)) continue;
        free(*out);
        if (!(*out = strndup(vb, (size_t)(ve - vb)))) return ss__rfail(SS_ENOMEM, "out of memory");
    }
    return 0;
}

int ss__ini_get(char **out, const char *text, size_t len, const char *section, const char *key) {
    *out = NULL;
    int rc = ini_scan(out, text, len, section, key);
    if (rc) free(*out), *out = NULL; /* a damaged file gives no value */
    return rc;
}

/* The whole file `path` (*out NULL when it does not exist). */
static int aws_read(char **out, size_t *len, const char *path) {
    *out = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return errno == ENOENT || errno == ENOTDIR ? 0 : ss__rfail(SS_EIO, "read '%s': %s",
                                                                         path, strerror(errno));
    size_t cap = 0;
    char buf[4096];
    size_t n;
    int rc = 0;
    while (!rc && (n = fread(buf, 1, sizeof buf, f)) > 0) {
        if (*len + n > (1u << 20)) rc = ss__rfail(SS_ETOOBIG, "read '%s': over 1 MiB", path);
        if (!rc && *len + n + 1 > cap) {
            cap = (*len + n + 1) * 2;
            char *g = realloc(*out, cap);
            if (!g) rc = ss__rfail(SS_ENOMEM, "out of memory");
            else *out = g;
        }
        if (!rc) memcpy(*out + *len, buf, n), *len += n;
    }
    if (!rc && ferror(f)) rc = ss__rfail(SS_EIO, "read '%s': %s", path, strerror(errno));
    fclose(f);
    if (rc) free(*out), *out = NULL;
    return rc;
}

/* A file named by `env`, else ~/.aws/`name` (*path malloc'd, NULL without HOME). */
static char *aws_file(const char *env, const char *name) {
    const char *p = getenv(env), *home = getenv("HOME");
    char *s = NULL;
    if (p && *p) return strdup(p);
    if (home && *home && asprintf(&s, "%s/.aws/%s", home, name) < 0) s = NULL;
    return s;
}

typedef struct aws_files {
    char *cred, *conf; /* texts, NULL when absent */
    size_t cred_len, conf_len;
    char *cred_path, *conf_path;
    char *profile, *conf_section; /* "NAME"; "default" or "profile NAME" */
} aws_files;

static int aws_files_load(aws_files *f, const char *profile) {
    const char *p = profile && *profile ? profile : getenv("AWS_PROFILE");
    if (!p || !*p) p = "default";
    f->profile = strdup(p);
    f->cred_path = aws_file("AWS_SHARED_CREDENTIALS_FILE", "credentials");
    f->conf_path = aws_file("AWS_CONFIG_FILE", "config");
    if (!f->profile) return ss__rfail(SS_ENOMEM, "out of memory");
    if (asprintf(&f->conf_section, strcmp(p, "default") ? "profile %s" : "%s", p) < 0)
        return f->conf_section = NULL, ss__rfail(SS_ENOMEM, "out of memory");
    int rc = f->cred_path ? aws_read(&f->cred, &f->cred_len, f->cred_path) : 0;
    if (!rc && f->conf_path) rc = aws_read(&f->conf, &f->conf_len, f->conf_path);
    return rc;
}

static void aws_files_free(aws_files *f) {
    free(f->cred), free(f->conf), free(f->cred_path), free(f->conf_path);
    free(f->profile), free(f->conf_section);
}

/* `*out` = the value of `key` from the credentials file's profile, else the
 * config file's (either may be skipped), unless already set. */
static int aws_lookup(char **out, const aws_files *f, const char *key, int cred, int conf) {
    if (*out) return 0;
    int rc = 0;
    if (cred && f->cred && (rc = ss__ini_get(out, f->cred, f->cred_len, f->profile, key)))
        return ss__rcontext(rc, "AWS credentials file '%s'", f->cred_path);
    if (!*out && conf && f->conf &&
        (rc = ss__ini_get(out, f->conf, f->conf_len, f->conf_section, key)))
        return ss__rcontext(rc, "AWS config file '%s'", f->conf_path);
    return 0;
}

/* `*out` = the first set of `a` (an option) and the environment variables. */
static int aws_first(char **out, const char *a, const char *env1, const char *env2) {
    const char *v = a && *a ? a : NULL;
    if (!v && env1) v = getenv(env1);
    if ((!v || !*v) && env2) v = getenv(env2);
    *out = NULL;
    if (v && *v && !(*out = strdup(v))) return ss__rfail(SS_ENOMEM, "out of memory");
    return 0;
}

void ss__aws_free(ss__aws *a) {
    free(a->access_key), free(a->secret_key), free(a->token), free(a->region), free(a->endpoint);
    free(a->ca_bundle);
    memset(a, 0, sizeof *a);
}

int ss__aws_resolve(ss__aws *out, const char *profile, const char *region, const char *endpoint) {
    memset(out, 0, sizeof *out);
    aws_files f = {0};
    int rc = aws_files_load(&f, profile);
    /* the key pair and token come together: from the environment or the files */
    if (!rc) rc = aws_first(&out->access_key, NULL, "AWS_ACCESS_KEY_ID", NULL);
    if (!rc && out->access_key) rc = aws_first(&out->secret_key, NULL, "AWS_SECRET_ACCESS_KEY", NULL);
    if (!rc && out->access_key) rc = aws_first(&out->token, NULL, "AWS_SESSION_TOKEN", NULL);
    if (!rc && !out->access_key) {
        rc = aws_lookup(&out->access_key, &f, "aws_access_key_id", 1, 1);
        if (!rc) rc = aws_lookup(&out->secret_key, &f, "aws_secret_access_key", 1, 1);
        if (!rc) rc = aws_lookup(&out->token, &f, "aws_session_token", 1, 1);
    }
    if (!rc) rc = aws_first(&out->region, region, "AWS_REGION", "AWS_DEFAULT_REGION");
    if (!rc) rc = aws_lookup(&out->region, &f, "region", 0, 1);
    if (!rc && !out->region && !(out->region = strdup("us-east-1")))
        rc = ss__rfail(SS_ENOMEM, "out of memory");
    if (!rc) rc = aws_first(&out->endpoint, endpoint, "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL");
    if (!rc) rc = aws_lookup(&out->endpoint, &f, "endpoint_url", 0, 1);
    static const char *const ca_vars[] = {"AWS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE"};
    for (size_t i = 0; !rc && !out->ca_bundle && i < 3; i++)
        if (!(rc = aws_first(&out->ca_bundle, NULL, ca_vars[i], NULL)) && out->ca_bundle)
            out->ca_from = ca_vars[i];
    if (!rc && !out->ca_bundle && !(rc = aws_lookup(&out->ca_bundle, &f, "ca_bundle", 0, 1)) &&
        out->ca_bundle)
        out->ca_from = "the AWS profile's ca_bundle";
    if (!rc && (!out->access_key) != (!out->secret_key))
        rc = ss__rfail(SS_EINVAL, "AWS credentials of profile '%s': %s without %s", f.profile,
                       out->access_key ? "an access key id" : "a secret access key",
                       out->access_key ? "its secret access key" : "its access key id");
    if (!rc && out->endpoint) {
        size_t n = strlen(out->endpoint);
        while (n && out->endpoint[n - 1] == '/') out->endpoint[--n] = '\0';
        if (strncmp(out->endpoint, "http://", 7) && strncmp(out->endpoint, "https://", 8))
            rc = ss__rfail(SS_EINVAL, "S3 endpoint '%s': not an http:// or https:// URL",
                           out->endpoint);
    }
    aws_files_free(&f);
    if (rc) ss__aws_free(out);
    return rc;
}
