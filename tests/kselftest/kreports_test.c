// SPDX-License-Identifier: BSD-2-Clause
/*
 * The debug tier checks itself: a module of its own (tests/kmod,
 * dsmem_plant.ko) plants leaks and a use after free, and the tier's
 * checker, scripts/guest.d/kreports, must fail on each and name the
 * planted function.  Without this, a checker that stopped seeing reports
 * (a changed report format, kmemleak off, a broken filter) would pass
 * every run.  Debug kernel only, and last in the tier: a KASAN report
 * taints the kernel and turns lockdep off for the rest of the boot.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "util.h"

/* build/debug/kernel/dsmem.ko -> build/debug/tests/kmod/dsmem_plant.ko */
static int plant_path(char *buf, size_t size)
{
	const char *ko = getenv("DSMEM_KO");
	const char *slash = ko ? strrchr(ko, '/') : NULL;

	if (!slash)
		return -ENOENT;
	if (snprintf(buf, size, "%.*s/../tests/kmod/dsmem_plant.ko",
		     (int)(slash - ko), ko) >= (int)size)
		return -ENAMETOOLONG;
	return access(buf, R_OK) ? -errno : 0;
}

/* Run kreports with args; its output into out, its exit status back. */
static int kreports(char *out, size_t size, const char *args)
{
	char cmd[512];
	size_t n = 0;
	FILE *f;
	int st;

	snprintf(cmd, sizeof(cmd), "%s %s 2>&1", getenv("DSMEM_KREPORTS"), args);
	fflush(NULL);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (n + 1 < size && fgets(out + n, size - n, f))
		n += strlen(out + n);
	out[n] = '\0';
	/* the rest, unread, would block the checker */
	while (fgetc(f) != EOF)
		;
	st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Print the checker's output as comments: its "not ok" lines are ours. */
static void show(const char *out)
{
	const char *p = out;

	while (*p) {
		const char *nl = strchr(p, '\n');
		int len = nl ? (int)(nl - p) : (int)strlen(p);

		fprintf(stderr, "#   | %.*s\n", len, p);
		p += len + (nl != NULL);
	}
}

static bool debug_tier(void)
{
	return debug_kernel() && getenv("DSMEM_KREPORTS");
}

/* in each test: this harness runs the test after a SKIP in its set-up */
#define DEBUG_TIER_ONLY()						\
	do {								\
		if (!debug_tier())					\
			SKIP(return, "the debug tier's own check: debug kernel only"); \
	} while (0)

FIXTURE(plant) {
	char ko[512];
	char out[16384];
};

FIXTURE_SETUP(plant)
{
	if (!debug_tier())
		return;
	ASSERT_EQ(0, plant_path(self->ko, sizeof(self->ko)))
		TH_LOG("no dsmem_plant.ko beside DSMEM_KO: run 'make kernel-debug'");
	/* what earlier programs left is theirs, not ours */
	ASSERT_EQ(0, kreports(self->out, sizeof(self->out), "check kreports_test-before"))
		show(self->out);
}

FIXTURE_TEARDOWN(plant)
{
	if (debug_tier())
		run("rmmod dsmem_plant 2>/dev/null");
}

/* two kmemleak scans: about 100 s each on a debug guest beside another */
TEST_F_TIMEOUT(plant, leak_is_caught, 600)
{
	const char *verdict;
	int found = 0;

	DEBUG_TIER_ONLY();
	run("rmmod dsmem_plant 2>/dev/null");
	ASSERT_EQ(0, run("insmod %s plant=leak", self->ko));
	/* kmemleak reports an object once it is 5 s old */
	sleep(6);
	EXPECT_EQ(1, kreports(self->out, sizeof(self->out), "leaks planted-leak"));
	/*
	 * The module plants DSMEM_PLANT_LEAKS (4) objects: a stale copy of a
	 * pointer that kmemleak's conservative scan still finds may hide one.
	 * The module frees them as it goes, so one hidden now is not found
	 * by the run's last scan, as a leak of dsmem's.
	 */
	verdict = strstr(self->out, "not ok - planted-leak: kmemleak: ");
	EXPECT_NE(NULL, verdict);
	if (verdict) {
		EXPECT_EQ(1, sscanf(verdict, "not ok - planted-leak: kmemleak: %d dsmem leak(s)",
				    &found));
		EXPECT_LE(1, found);
		EXPECT_GE(4, found);
		if (found < 4)
			TH_LOG("kmemleak found %d of the 4 planted leaks", found);
	}
	EXPECT_NE(NULL, strstr(self->out, "dsmem_plant_leak"));
	show(self->out);
	/* the check forgets what it reported: the suite's own scan is clean */
	EXPECT_EQ(0, kreports(self->out, sizeof(self->out), "leaks after-planted-leak"));
}

TEST_F_TIMEOUT(plant, use_after_free_is_caught, 120)
{
	int st = 0;

	DEBUG_TIER_ONLY();
	/* a case killed by its timeout leaves its module: no teardown ran */
	run("rmmod dsmem_plant 2>/dev/null");
	ASSERT_EQ(0, run("insmod %s plant=uaf", self->ko));
	/* the report is in the log as insmod returns; the reader may lag */
	for (int i = 0; i < 20; i++) {
		st = kreports(self->out, sizeof(self->out), "check planted-uaf");
		if (st)
			break;
		usleep(250000);
	}
	EXPECT_EQ(1, st);
	EXPECT_TRUE(strstr(self->out, "BUG: KASAN: use-after-free in dsmem_plant_uaf") ||
		    strstr(self->out, "BUG: KFENCE: use-after-free read in dsmem_plant_uaf"));
	show(self->out);
	/* reported once: the next check starts after it */
	EXPECT_EQ(0, kreports(self->out, sizeof(self->out), "check after-planted-uaf"));
}

TEST_HARNESS_MAIN
