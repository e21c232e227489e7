// SPDX-License-Identifier: BSD-2-Clause
/*
 * Module lifecycle: repeated load/unload without leaks, unload under a
 * listening monitor, unload refused while /dev/dsmem is open.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <poll.h>
#include <unistd.h>

#include <linux/dsmem.h>
#include <dsmem/ds.h>

#include "kselftest_harness.h"
#include "util.h"

/* dsmem.ko's core [start, end) from /proc/modules, while it is loaded */
static int module_range(unsigned long *start, unsigned long *end)
{
	char line[512], name[64];
	unsigned long size, base;
	FILE *f = fopen("/proc/modules", "re");
	int ret = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %lu %*s %*s %*s %lx", name, &size, &base) == 3 &&
		    !strcmp(name, "dsmem")) {
			*start = base;
			*end = base + size;
			ret = base ? 0 : -EPERM;
		}
	fclose(f);
	return ret;
}

struct live {
	char ptr[40];
	char site[80];
};

/*
 * Replay the trace: an allocation whose call site lies in the module is
 * live until a free of the same pointer.  Returns the number of such
 * allocations seen; leaks are left in *leaks.
 */
static int replay_trace(unsigned long start, unsigned long end,
			struct live *tab, int cap, int *leaks)
{
	FILE *f = fopen(TRACEFS "/trace", "re");
	char line[1024];
	int n = 0, seen = 0;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *ev, *site, *ptr;
		char pbuf[40];

		if (line[0] == '#')
			continue;
		ptr = strstr(line, " ptr=");
		if (!ptr || sscanf(ptr + 5, "%39s", pbuf) != 1)
			continue;
		if ((ev = strstr(line, " kfree:")) || (ev = strstr(line, " kmem_cache_free:"))) {
			for (int i = 0; i < n; i++)
				if (!strcmp(tab[i].ptr, pbuf)) {
					tab[i] = tab[--n];
					break;
				}
			continue;
		}
		if (!strstr(line, " kmalloc") && !strstr(line, " kmem_cache_alloc"))
			continue;
		/* sym-addr: "call_site=name+off/len [mod] <addr>" or a bare address */
		site = strstr(line, "call_site=");
		if (!site)
			continue;
		unsigned long addr = 0;
		char *lt = strchr(site, '<');
		if (lt && lt < ptr)
			addr = strtoul(lt + 1, NULL, 16);
		else
			addr = strtoul(site + 10, NULL, 16);
		if (addr < start || addr >= end)
			continue;
		seen++;
		if (n < cap) {
			snprintf(tab[n].ptr, sizeof(tab[n].ptr), "%s", pbuf);
			snprintf(tab[n].site, sizeof(tab[n].site), "%.*s",
				 (int)strcspn(site, " "), site);
			n++;
		}
	}
	fclose(f);
	*leaks = n;
	return seen;
}

static const char *const alloc_events[] = {
	"kmem/kmalloc", "kmem/kmalloc_node", "kmem/kmem_cache_alloc",
	"kmem/kmem_cache_alloc_node", "kmem/kfree", "kmem/kmem_cache_free",
};

static int trace_events_enable(void)
{
	for (size_t i = 0; i < sizeof(alloc_events) / sizeof(alloc_events[0]); i++) {
		int ret = tracefs_event_enable(alloc_events[i]);

		/* kmalloc (the first) is needed; kmalloc_node and the like
		 * are absent from some kernels */
		if (ret && (ret != -ENOENT || i == 0))
			return ret;
	}
	return 0;
}

/* no state; exists so the tests can have TCG-sized timeouts */
FIXTURE(mod) {
	int unused;
};

FIXTURE_SETUP(mod)
{
	if (!module_loaded())
		ASSERT_EQ(0, module_load());
}

FIXTURE_TEARDOWN(mod)
{
	tracefs_write("tracing_on", "0");	/* after a failed assertion mid-loop */
}

/* Exercise what the module allocates: devices, requests, ioctls, events. */
static int exercise(void)
{
	struct dsmem_ioc_version v = {};
	struct ds_dev_info *devs;
	struct ds_monitor *mon;
	struct ds_ctx *ctx;
	size_t n;
	int fd;

	fd = open("/dev/dsmem", O_RDWR | O_CLOEXEC);
	if (fd < 0 || ioctl(fd, DSMEM_IOC_VERSION, &v))
		return 1;
	close(fd);
	if (ds_ctx_open(&ctx) || ds_dev_list(ctx, &devs, &n) || n < 1)
		return 2;
	ds_dev_list_free(devs);
	ds_ctx_close(ctx);
	if (ds_monitor_open(&mon))
		return 3;
	if (run("rdma link add rxe9 type rxe netdev %s && rdma link delete rxe9",
		env_or_die("DSMEM_SPARE_NETDEV")))
		return 4;
	ds_monitor_close(mon);
	return 0;
}

/*
 * 20 cycles on Debian's kernel; 5 on the debug kernel, where a cycle takes
 * about 20 s under TCG and kmemleak and KASAN watch each one besides.
 */
TEST_F_TIMEOUT(mod, load_unload_cycles_without_leaks, 600)
{
	static struct live tab[4096];
	unsigned long taint = kernel_taint();
	const int cycles = debug_kernel() ? 5 : 20;
	int total_seen = 0;

	ASSERT_EQ(0, tracefs_mount()) TH_LOG("no tracefs");
	ASSERT_EQ(0, tracefs_write("buffer_size_kb", "8192"));
	ASSERT_EQ(0, tracefs_write("trace_options", "sym-addr"));
	ASSERT_EQ(0, trace_events_enable());
	ASSERT_EQ(0, tracefs_write("tracing_on", "1"));

	ASSERT_EQ(0, module_unload());

	for (int cycle = 0; cycle < cycles; cycle++) {
		unsigned long start, end;
		int leaks, seen;

		ASSERT_EQ(0, tracefs_write("trace", ""));
		ASSERT_EQ(0, module_load()) TH_LOG("cycle %d: insmod", cycle);
		ASSERT_EQ(0, module_range(&start, &end));
		ASSERT_EQ(0, access("/dev/dsmem", F_OK));
		ASSERT_EQ(0, exercise()) TH_LOG("cycle %d", cycle);
		ASSERT_EQ(0, module_unload()) TH_LOG("cycle %d: rmmod", cycle);

		ASSERT_FALSE(module_loaded());
		ASSERT_NE(0, access("/dev/dsmem", F_OK)) TH_LOG("/dev/dsmem left behind");
		struct ds_ctx *ctx;
		ASSERT_EQ(-ENOENT, ds_ctx_open(&ctx)) TH_LOG("netlink family left behind");

		seen = replay_trace(start, end, tab, 4096, &leaks);
		ASSERT_GE(seen, 0);
		for (int k = 0; k < leaks; k++) {
			TH_LOG("cycle %d: leaked %s from %s", cycle, tab[k].ptr, tab[k].site);
		}
		ASSERT_EQ(0, leaks);
		total_seen += seen;
	}
	tracefs_write("tracing_on", "0");
	tracefs_write("trace_options", "nosym-addr");
	tracefs_write("trace", "");
	/* the detector must have seen the module allocate, or it proves nothing */
	TH_LOG("module allocations traced and freed: %d", total_seen);
	EXPECT_GE(total_seen, cycles * 2) TH_LOG("saw only %d module allocations", total_seen);
	EXPECT_EQ(taint, kernel_taint()) TH_LOG("the kernel was tainted");
	EXPECT_EQ(0, module_load());
}

TEST_F_TIMEOUT(mod, unload_refused_while_open, 120)
{
	int fd;

	fd = open("/dev/dsmem", O_RDWR | O_CLOEXEC);
	ASSERT_GE(fd, 0);
	EXPECT_NE(0, run("rmmod dsmem 2>/dev/null"));
	EXPECT_TRUE(module_loaded());
	close(fd);
	EXPECT_EQ(0, module_unload());
	EXPECT_EQ(0, module_load());
}

/* Lines from a pipe, read without stdio so that poll() tells the truth. */
struct line_reader {
	int fd;
	char buf[65536];
	size_t len;
};

/* Next line containing want, waiting at most ~10 s for each line. */
static bool wait_line(struct line_reader *r, const char *want, char *line, size_t size)
{
	for (int idle = 0; idle < 50;) {
		char *nl = memchr(r->buf, '\n', r->len);

		if (nl) {
			size_t n = nl - r->buf + 1;

			snprintf(line, size, "%.*s", (int)(n - 1), r->buf);
			memmove(r->buf, r->buf + n, r->len - n);
			r->len -= n;
			if (strstr(line, want))
				return true;
			continue;
		}
		struct pollfd p = { .fd = r->fd, .events = POLLIN };
		if (poll(&p, 1, 200) <= 0) {
			idle++;
			continue;
		}
		ssize_t got = read(r->fd, r->buf + r->len, sizeof(r->buf) - 1 - r->len);
		if (got <= 0)
			return false;
		r->len += got;
	}
	return false;
}

TEST_F_TIMEOUT(mod, unload_while_monitor_attached, 300)
{
	const char *spare = env_or_die("DSMEM_SPARE_NETDEV");
	static struct line_reader r;
	char line[4096];
	int pipefd[2], status;
	bool ready = false;
	pid_t pid;

	ASSERT_EQ(0, pipe(pipefd));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		dup2(pipefd[1], 1);
		close(pipefd[0]);
		execl(dsctl_path(), "dsctl", "-j", "monitor", (char *)NULL);
		_exit(127);
	}
	close(pipefd[1]);
	r.fd = pipefd[0];
	r.len = 0;

	/* the monitor is listening once it reports a device we add */
	for (int i = 0; i < 10 && !ready; i++) {
		run("rdma link add rxe9 type rxe netdev %s", spare);
		ready = wait_line(&r, "\"dev_new\"", line, sizeof(line));
		run("rdma link delete rxe9 2>/dev/null");
	}
	ASSERT_TRUE(ready) TH_LOG("dsctl monitor never reported a device");

	ASSERT_EQ(0, module_unload()) TH_LOG("a monitor must not pin the module");
	EXPECT_TRUE(wait_line(&r, "\"module_unloaded\"", line, sizeof(line)));
	ASSERT_EQ(0, module_load());
	EXPECT_TRUE(wait_line(&r, "\"module_loaded\"", line, sizeof(line)));

	/* and it follows the new instance of the family */
	ASSERT_EQ(0, run("rdma link add rxe9 type rxe netdev %s", spare));
	EXPECT_TRUE(wait_line(&r, "\"rxe9\"", line, sizeof(line)));
	EXPECT_NE(NULL, strstr(line, "\"dev_new\""));
	run("rdma link delete rxe9");

	kill(pid, SIGTERM);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	close(r.fd);
}

TEST_HARNESS_MAIN
