/* test_nvml.c: the collector's NVML reader (sampler/nvml.c) against the
 * fake NVML (test/fake/fake_nvml.c), through the real dlopen and dlsym: what
 * each device gives, what a failed query, a failed nvmlInit, a missing
 * library and a library without NVML's entry points give, that NVML is shut
 * down after the read, and the read in a thread of its own.
 * Usage: test_nvml PATH/TO/libfake_nvml.so */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "nvml.h"

#define SEC UINT64_C(1000000000)

static const char *fake;

/* The fake answers from the environment at each nvmlInit_v2. */
static void fake_env(const char *gpus, const char *init_fail, const char *init_ms)
{
    gpus ? setenv("FAKE_NVML_GPUS", gpus, 1) : unsetenv("FAKE_NVML_GPUS");
    init_fail ? setenv("FAKE_NVML_INIT_FAIL", init_fail, 1) : unsetenv("FAKE_NVML_INIT_FAIL");
    init_ms ? setenv("FAKE_NVML_INIT_MS", init_ms, 1) : unsetenv("FAKE_NVML_INIT_MS");
}

static int test_two_gpus_in_index_order(void)
{
    struct nvml_gpus g;

    fake_env("NVIDIA H100 80GB HBM3:5x16,Fake GPU:4x8", NULL, NULL);
    CHECK_OK(nvml_read(fake, &g, NULL));
    CHECK_EQ(g.count, 2);
    CHECK_STR(g.pcie_max, "5x16,4x8");
    CHECK_STR(g.names, "NVIDIA H100 80GB HBM3;Fake GPU");
    return 0;
}

static int test_default_one_gpu(void)
{
    struct nvml_gpus g;

    fake_env(NULL, NULL, NULL);
    CHECK_OK(nvml_read(fake, &g, NULL));
    CHECK_EQ(g.count, 1);
    CHECK_STR(g.pcie_max, "5x16");
    CHECK_STR(g.names, "Fake GPU");
    return 0;
}

static int test_failed_link_query_gives_question_mark(void)
{
    struct nvml_gpus g;

    fake_env("A:5x16,B;C:?,D:3x4", NULL, NULL);
    CHECK_OK(nvml_read(fake, &g, NULL));
    CHECK_EQ(g.count, 3);
    CHECK_STR(g.pcie_max, "5x16,?,3x4");
    CHECK_STR(g.names, "A;B C;D"); /* the ';' of a name would split it */
    return 0;
}

static int test_init_failure(void)
{
    struct nvml_gpus g;
    struct cs_err err = {""};

    fake_env(NULL, "1", NULL);
    CHECK_ERR(nvml_read(fake, &g, &err), -EIO);
    CHECK_STR(err.msg, "nvmlInit_v2 failed (NVML error 9)");
    CHECK_EQ(g.count, 0);
    return 0;
}

static int test_missing_library(void)
{
    struct nvml_gpus g;
    struct cs_err err = {""};

    fake_env(NULL, NULL, NULL);
    CHECK_ERR(nvml_read("/nonexistent/libnvidia-ml.so.1", &g, &err), -ENOENT);
    CHECK_STR(err.msg, "/nonexistent/libnvidia-ml.so.1: cannot open shared object file: "
                       "No such file or directory");
    return 0;
}

static int test_library_without_nvml(void)
{
    struct nvml_gpus g;
    struct cs_err err = {""};

    CHECK_ERR(nvml_read("libm.so.6", &g, &err), -ENOSYS);
    CHECK_STR(err.msg, "libm.so.6: no nvmlInit_v2 (not an NVML library)");
    return 0;
}

/* nvmlShutdown follows every successful nvmlInit_v2, and only those. */
static int test_shutdown_after_read(void)
{
    char log[] = "/tmp/cs_test_nvml.XXXXXX", buf[64] = "";
    struct nvml_gpus g;
    int fd = mkstemp(log);
    ssize_t n;

    CHECK(fd >= 0);
    setenv("FAKE_NVML_LOG", log, 1);
    fake_env(NULL, NULL, NULL);
    nvml_read(fake, &g, NULL);
    fake_env(NULL, "1", NULL);
    nvml_read(fake, &g, NULL);
    unsetenv("FAKE_NVML_LOG");
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    unlink(log);
    CHECK(n > 0);
    CHECK_STR(buf, "init\nshutdown\ninit\n");
    return 0;
}

static int test_job_gives_the_read(void)
{
    struct nvml_job *j = nvml_job_new(fake);
    struct nvml_gpus g;
    int rc;

    fake_env("Fake GPU:4x8", NULL, NULL);
    CHECK(j != NULL);
    CHECK_OK(nvml_job_open(j));
    rc = nvml_job_wait(j, 30 * SEC, &g, NULL);
    nvml_job_free(j);
    CHECK_OK(rc);
    CHECK_STR(g.pcie_max, "4x8");
    CHECK_STR(g.names, "Fake GPU");
    return 0;
}

/* A slow nvmlInit holds up none of the caller's loop: waiting without a
 * timeout answers at once. */
static int test_job_slow_init_does_not_block(void)
{
    struct nvml_job *j = nvml_job_new(fake);
    struct nvml_gpus g;
    int rc, later;

    fake_env(NULL, NULL, "300");
    CHECK(j != NULL);
    CHECK_OK(nvml_job_open(j));
    rc = nvml_job_wait(j, 0, &g, NULL);
    later = nvml_job_wait(j, 30 * SEC, &g, NULL);
    nvml_job_free(j);
    CHECK_ERR(rc, -EAGAIN);
    CHECK_OK(later);
    CHECK_STR(g.pcie_max, "5x16");
    return 0;
}

/* Freed while its thread is still in nvmlInit (a run shorter than it): the
 * thread frees the job when it returns (ASan sees any use after free). Last:
 * the thread reads the environment meanwhile. */
static int test_job_freed_while_running(void)
{
    struct nvml_job *j = nvml_job_new(fake);

    fake_env(NULL, NULL, "300");
    CHECK(j != NULL);
    CHECK_OK(nvml_job_open(j));
    nvml_job_free(j);
    usleep(600 * 1000); /* let it finish before exit; nothing is timed */
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_nvml PATH/TO/libfake_nvml.so\n");
        return 2;
    }
    fake = argv[1];
    RUN(test_two_gpus_in_index_order);
    RUN(test_default_one_gpu);
    RUN(test_failed_link_query_gives_question_mark);
    RUN(test_init_failure);
    RUN(test_missing_library);
    RUN(test_library_without_nvml);
    RUN(test_shutdown_after_read);
    RUN(test_job_gives_the_read);
    RUN(test_job_slow_init_does_not_block);
    RUN(test_job_freed_while_running);
    return check_status();
}
