// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"

const char *env_or_die(const char *name)
{
	const char *v = getenv(name);

	if (!v || !*v) {
		fprintf(stderr, "# %s is not set: run this test through scripts/guest\n", name);
		exit(1);
	}
	return v;
}

int run(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	fflush(NULL);
	st = system(cmd);
	if (st == -1 || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

bool module_loaded(void)
{
	return access("/sys/module/dsmem", F_OK) == 0;
}

int module_load(void)
{
	return run("insmod %s", env_or_die("DSMEM_KO"));
}

int module_unload(void)
{
	return run("rmmod dsmem");
}

const char *dsctl_path(void)
{
	static char path[PATH_MAX];
	char self[PATH_MAX - 32];
	ssize_t n;

	if (path[0])
		return path;
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0)
		return "dsctl";
	self[n] = '\0';
	*strrchr(self, '/') = '\0';
	/* build/user/kselftest/X -> build/user/user/tools/dsctl */
	snprintf(path, sizeof(path), "%s/../user/tools/dsctl", self);
	return path;
}

int read_file(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

unsigned long kernel_taint(void)
{
	char buf[32];

	if (read_file("/proc/sys/kernel/tainted", buf, sizeof(buf)))
		return ~0UL;
	return strtoul(buf, NULL, 10);
}
