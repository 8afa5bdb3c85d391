/* SPDX-License-Identifier: BSD-2-Clause */
/* test_rank_env.c - ss_rank_from_env(): torchrun, Open MPI and Slurm
 * variables in that order, explicit values winning, errors naming the
 * variables; and `seqstore convert --shard auto` taking K/N from them. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

static const char *const VARS[] = {
    "RANK",         "WORLD_SIZE",  "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
    "SLURM_PROCID", "SLURM_NTASKS"};

static void clear(void) {
    for (size_t k = 0; k < sizeof VARS / sizeof VARS[0]; k++) unsetenv(VARS[k]);
}

static void expect(uint32_t r0, uint32_t w0, uint32_t r, uint32_t w, const char *src) {
    const char *got = NULL;
    CHECK_OK(ss_rank_from_env(&r0, &w0, &got));
    CHECK_EQ_U64(r0, r);
    CHECK_EQ_U64(w0, w);
    CHECK(!strcmp(got, src));
}

static void expect_fail(const char *msg) {
    uint32_t r = SS_RANK_UNSET, w = SS_RANK_UNSET;
    CHECK_RC(ss_rank_from_env(&r, &w, NULL), SS_EINVAL);
    CHECK(r == SS_RANK_UNSET && w == SS_RANK_UNSET);
    CHECK_CONTAINS(ss_error_message(), msg);
}

int main(void) {
    const uint32_t U = SS_RANK_UNSET;
    clear();
    expect(U, U, 0, 1, "default");
    setenv("SLURM_PROCID", "5", 1), setenv("SLURM_NTASKS", "8", 1);
    expect(U, U, 5, 8, "SLURM_PROCID/SLURM_NTASKS");
    setenv("OMPI_COMM_WORLD_RANK", "2", 1), setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
    expect(U, U, 2, 4, "OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE");
    setenv("RANK", "1", 1), setenv("WORLD_SIZE", "3", 1);
    expect(U, U, 1, 3, "RANK/WORLD_SIZE");
    expect(0, 2, 0, 2, "explicit");        /* explicit values win */
    expect(U, 7, 1, 7, "RANK/WORLD_SIZE"); /* one explicit, the other read */
    /* errors name the variables; the outputs are left alone */
    setenv("WORLD_SIZE", "x3", 1);
    expect_fail("RANK='1' WORLD_SIZE='x3': not a decimal number");
    unsetenv("WORLD_SIZE");
    expect_fail("RANK is set but WORLD_SIZE is not");
    setenv("RANK", "3", 1), setenv("WORLD_SIZE", "3", 1);
    expect_fail("rank 3 of world size 3 (from RANK/WORLD_SIZE)");
    setenv("RANK", "0", 1), setenv("WORLD_SIZE", "0", 1);
    expect_fail("world size 0");
    setenv("WORLD_SIZE", "4294967295", 1);
    expect_fail("not a decimal number");
    CHECK_RC(ss_rank_from_env(NULL, &(uint32_t){1}, NULL), SS_EINVAL);

    /* convert --shard auto: K/N from the environment, explicit --shard wins */
    clear();
    const char *text = ss_test_keep_path("t.txt");
    ss_test_write_file(text, "a\nb\nc\nd\ne\nf\ng\nh\n", 16);
    char err[4096];
    for (int k = 0; k < 2; k++) {
        char env[128];
        snprintf(env, sizeof env, "OMPI_COMM_WORLD_RANK=%d OMPI_COMM_WORLD_SIZE=2", k);
        CHECK_EXIT(ss_test_cli(err, sizeof err, env,
                               "convert text %s -o %s/auto-%d.ss --shard auto", text,
                               ss_test_tmpdir(), k),
                   0, err);
    }
    const char *shards[2] = {ss_test_keep_path("auto-0.ss"), ss_test_keep_path("auto-1.ss")};
    CHECK_EXIT(
        ss_test_cli(err, sizeof err, NULL, "convert text %s -o %s/one.ss", text, ss_test_tmpdir()),
        0, err);
    ss_test_check_shards(ss_test_keep_path("one.ss"), shards, 2);
    ss_store *s;
    ss_attr a;
    CHECK_OK(ss_open(&s, shards[1], 0));
    CHECK_OK(ss_attr_get(&a, s, "source.shard"));
    CHECK(a.size == 3 && !memcmp(a.data, "1/2", 3));
    ss_close(s);
    CHECK_EXIT(ss_test_cli(err, sizeof err, "RANK=1 WORLD_SIZE=2",
                           "convert text %s -o %s/x.ss --shard 0/1", text, ss_test_tmpdir()),
               0, err);
    CHECK_OK(ss_open(&s, ss_test_path("x.ss"), 0));
    CHECK_EQ_U64(ss_count(s), 8);
    ss_close(s);
    CHECK_EXIT(ss_test_cli(err, sizeof err, "RANK=1", "convert text %s -o %s/y.ss --shard auto",
                           text, ss_test_tmpdir()),
               2, err);
    CHECK_CONTAINS(err, "RANK is set but WORLD_SIZE is not");
    puts("ok");
    return 0;
}
