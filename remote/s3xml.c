/* SPDX-License-Identifier: BSD-2-Clause */
/* s3xml.c - the few XML documents S3 answers with (an <Error>'s Code and
 * Message, InitiateMultipartUploadResult's UploadId), read with expat. */
#include "remote_impl.h"

#include <expat.h>
#include <string.h>

typedef struct xml_ctx {
    const char *want;
    char *out;
    size_t cap, len;
    int depth_in; /* > 0 while inside the wanted element (its depth) */
    int depth;
    int found, done;
} xml_ctx;

/* An element's local name: namespaces are not expanded, so drop "prefix:". */
static const char *xml_local(const char *name) {
    const char *c = strrchr(name, ':');
    return c ? c + 1 : name;
}

static void XMLCALL xml_start(void *vctx, const XML_Char *name, const XML_Char **attrs) {
    (void)attrs;
    xml_ctx *x = vctx;
    x->depth++;
    if (!x->found && !x->done && !strcmp(xml_local(name), x->want)) {
        x->found = 1;
        x->depth_in = x->depth;
    }
}

static void XMLCALL xml_end(void *vctx, const XML_Char *name) {
    (void)name;
    xml_ctx *x = vctx;
    if (x->depth_in == x->depth) x->depth_in = 0, x->done = 1;
    x->depth--;
}

static void XMLCALL xml_chars(void *vctx, const XML_Char *s, int n) {
    xml_ctx *x = vctx;
    if (!x->depth_in || n <= 0) return;
    size_t take = (size_t)n;
    if (take > x->cap - 1 - x->len) take = x->cap - 1 - x->len;
    memcpy(x->out + x->len, s, take);
    x->len += take;
    x->out[x->len] = '\0';
}

int ss__xml_text(char *out, size_t cap, const char *xml, size_t len, const char *element) {
    if (!cap) return ss__rfail(SS_EINVAL, "ss__xml_text: no room");
    out[0] = '\0';
    if (len > (size_t)1 << 30) return ss__rfail(SS_ETOOBIG, "XML: document over 1 GiB");
    XML_Parser p = XML_ParserCreate("UTF-8");
    if (!p) return ss__rfail(SS_ENOMEM, "XML: out of memory");
    xml_ctx x = {element, out, cap, 0, 0, 0, 0, 0};
    XML_SetUserData(p, &x);
    XML_SetElementHandler(p, xml_start, xml_end);
    XML_SetCharacterDataHandler(p, xml_chars);
    int rc = 0;
    if (XML_Parse(p, xml, (int)len, 1) == XML_STATUS_ERROR)
        rc = ss__rfail(SS_ECORRUPT, "XML: %s at line %lu", XML_ErrorString(XML_GetErrorCode(p)),
                       (unsigned long)XML_GetCurrentLineNumber(p));
    else if (!x.found)
        rc = ss__rfail(SS_ENOTFOUND, "XML: no element <%s>", element);
    XML_ParserFree(p);
    if (rc) out[0] = '\0';
    return rc;
}
