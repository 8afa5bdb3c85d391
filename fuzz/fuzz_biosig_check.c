/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_biosig_check.c - libFuzzer target for the header checks that run
 * before BioSig sees a file (converters/biosig_check.c): the GDF check on
 * the input as a whole file, the BrainVision header and marker file checks
 * on it as text. Self-contained (the checks need no library); checks the
 * promises of biosig_check.h on every accepted input. */
#include "../converters/biosig_check.c"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void gdf(const uint8_t *data, size_t size) {
    char err[512];
    err[0] = '\0';
    if (ss__bs_check_gdf(data, size, size, err, sizeof err)) {
        if (!err[0]) abort(); /* a refusal always says why */
        return;
    }
    uint64_t hl = ss__bs_gdf_header_len(data, size);
    if (!hl) return; /* left to BioSig: too short or no GDF version */
    uint64_t ns = (uint64_t)data[252] | (uint64_t)data[253] << 8;
    if (hl < 256 * (ns + 1) || hl > size) abort();
    for (uint64_t k = 0; k < ns; k++) {
        const uint8_t *t = data + 256 + 220 * ns + 4 * k;
        if (!ss__bs_gdftyp_bits((uint32_t)t[0] | (uint32_t)t[1] << 8)) abort();
    }
}

static void vhdr(const uint8_t *data, size_t size) {
    ss_bs_vhdr v;
    char err[512];
    if (ss__bs_check_vhdr(&v, (const char *)data, size, err, sizeof err)) return;
    if (v.nch < 1 || v.nch > 65535 || !(v.interval > 0) || !isfinite(1e6 / v.interval)) abort();
    if (strlen(v.datafile) >= sizeof v.datafile || strlen(v.markerfile) >= sizeof v.markerfile)
        abort();
}

/* An accepted marker file: its markers counted; with dates added to the
 * undated 'New Segment' markers it is accepted again, with none undated,
 * the same markers, and only the dates' bytes added. */
static void vmrk(const uint8_t *data, size_t size) {
    size_t count = 0, undated = 0, lines = 1;
    char err[512];
    const char *text = (const char *)data;
    if (ss__bs_check_vmrk(&count, &undated, text, size, err, sizeof err)) return;
    for (size_t k = 0; k < size; k++) lines += data[k] == '\n' || data[k] == '\r';
    if (count >= lines || undated > count) abort(); /* the first line is the magic */
    size_t cap = size + SS_BS_VMRK_DATE_LEN * undated, c2, u2;
    char *dated = malloc(cap + 1);
    if (!dated) return;
    size_t dn = ss__bs_vmrk_dated(dated, cap, text, size);
    if (dn != cap || ss__bs_vmrk_dated(dated, cap - (undated > 0), text,
                                       size) != (undated ? 0 : dn))
        abort();
    dn = ss__bs_vmrk_dated(dated, cap, text, size);
    if (ss__bs_check_vmrk(&c2, &u2, dated, dn, err, sizeof err) || c2 != count || u2) abort();
    free(dated);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gdf(data, size);
    vhdr(data, size);
    vmrk(data, size);
    return 0;
}
