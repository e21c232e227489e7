/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The object store's selftests (store_test, twoguest_test): the processes
 * they run -- dsmaster, and store_worker clients driven line by line over
 * pipes -- and the fields of the workers' answers.
 */
#ifndef DSMEM_STORE_PROC_H
#define DSMEM_STORE_PROC_H

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct proc {
	pid_t pid;
	int in, out;		/* its stdin (we write), its stdout (we read) */
	char buf[65536];
	size_t len;
	char log[160];
};


static inline const char *beside(const char *name)
{
	static char path[4][PATH_MAX];
	static int next;
	char *p = path[next++ % 4];
	ssize_t n = readlink("/proc/self/exe", p, PATH_MAX - 64);

	if (n <= 0)
		return name;
	p[n] = 0;
	strcpy(strrchr(p, '/') + 1, name);
	return p;
}

static inline const char *worker_path(void)
{
	return beside("store_worker");
}

/* build/user/kselftest/X -> build/user/user/tools/dsmaster/dsmaster */
static inline const char *dsmaster_path(void)
{
	return beside("../user/tools/dsmaster/dsmaster");
}

/* build/user/kselftest/X -> scripts/store-certs of the repository */
static inline const char *store_certs_path(void)
{
	return beside("../../../scripts/store-certs");
}

/* build/user/kselftest/X -> scripts/store-env of the repository */
static inline const char *store_env_path(void)
{
	return beside("../../../scripts/store-env");
}

static inline pid_t spawn(struct proc *p, const char *log, char *const argv[], bool pipes)
{
	int in[2] = { -1, -1 }, out[2] = { -1, -1 };

	memset(p, 0, sizeof(*p));
	p->in = p->out = -1;
	snprintf(p->log, sizeof(p->log), "%s", log);
	if (pipes && (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC)))
		return -1;
	fflush(NULL);
	p->pid = fork();
	if (p->pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);

		if (fd >= 0) {
			dup2(fd, 2);
			if (!pipes)
				dup2(fd, 1);
		}
		if (pipes) {
			dup2(in[0], 0);
			dup2(out[1], 1);
		} else {
			int nul = open("/dev/null", O_RDONLY);

			dup2(nul, 0);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	if (pipes) {
		close(in[0]);
		close(out[1]);
		p->in = in[1];
		p->out = out[0];
	}
	return p->pid;
}

/* One line of p's output (without the newline), within timeout_ms. */
static inline int read_line(struct proc *p, char *line, size_t size, int timeout_ms)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		char *nl = memchr(p->buf, '\n', p->len);
		struct pollfd pfd = { .fd = p->out, .events = POLLIN };
		int left, n;

		if (nl) {
			size_t l = nl - p->buf;

			snprintf(line, size, "%.*s", (int)l, p->buf);
			memmove(p->buf, nl + 1, p->len - l - 1);
			p->len -= l + 1;
			return 0;
		}
		if (p->out < 0)
			return -EPIPE;
		clock_gettime(CLOCK_MONOTONIC, &t);
		left = timeout_ms - (int)((t.tv_sec - t0.tv_sec) * 1000 +
					  (t.tv_nsec - t0.tv_nsec) / 1000000);
		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, left) <= 0)
			continue;
		n = read(p->out, p->buf + p->len, sizeof(p->buf) - 1 - p->len);
		if (n <= 0)
			return -EPIPE;
		p->len += n;
	}
}

static inline int vsend(struct proc *p, const char *fmt, va_list ap)
{
	char cmd[2048];
	int n;

	n = vsnprintf(cmd, sizeof(cmd) - 1, fmt, ap);
	cmd[n++] = '\n';
	if (p->in < 0 || write(p->in, cmd, n) != n)
		return -EPIPE;
	return 0;
}

/* Send a command to a worker, not waiting for its answer. */
static inline int wsend(struct proc *p, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = vsend(p, fmt, ap);
	va_end(ap);
	return ret;
}

/* Send a command to a worker and read its one-line answer. */
/* A command to worker p, and its reply within timeout_ms. */
static inline int vcmd(struct proc *p, char *reply, size_t size, int timeout_ms,
		       const char *fmt, va_list ap)
{
	int ret;

	reply[0] = 0;
	ret = vsend(p, fmt, ap);
	if (ret)
		return ret;
	return read_line(p, reply, size, timeout_ms);
}

static inline int wcmd(struct proc *p, char *reply, size_t size, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	/* the task's own timeout (30 s by default) comes first */
	ret = vcmd(p, reply, size, 150000, fmt, ap);
	va_end(ap);
	return ret;
}

/*
 * The same for a command of many operations (a workload), which may
 * take longer as a whole than any one of them: timeout_ms for its reply.
 */
static inline int wcmd_within(struct proc *p, char *reply, size_t size, int timeout_ms,
			      const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = vcmd(p, reply, size, timeout_ms, fmt, ap);
	va_end(ap);
	return ret;
}

/* The value of field name in a worker's line (" name=VALUE"). */
static inline const char *kv_str(const char *line, const char *name, char *out, size_t size)
{
	size_t l = strlen(name);
	const char *s = line;

	out[0] = 0;
	while ((s = strstr(s, name))) {
		if ((s == line || s[-1] == ' ') && s[l] == '=') {
			size_t n = strcspn(s + l + 1, " ");

			snprintf(out, size, "%.*s", (int)n, s + l + 1);
			return out;
		}
		s += l;
	}
	return NULL;
}

static inline long long kv(const char *line, const char *name)
{
	char v[64];

	if (!kv_str(line, name, v, sizeof(v)))
		return LLONG_MIN;
	return strtoll(v, NULL, 0);
}

/* processes stop_proc() saw survive SIGKILL: a test that kills fails on one */
static int procs_stuck;

/* The kernel stacks of the tasks TASKS (a /proc glob), to stderr as TAP
 * comments; only those blocked in the kernel (state D) if BLOCKED. */
static inline void print_task_stacks(const char *tasks, int blocked)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd),
		 "for t in %s; do %s"
		 "echo \"$t $(cat $t/comm) $(cat $t/wchan)\"; cat $t/stack; "
		 "done 2>&1 | sed 's/^/#   /' >&2", tasks,
		 blocked ? "s=$(sed -n 's/^[0-9]* (.*) \\(.\\) .*/\\1/p' $t/stat 2>/dev/null); "
			   "[ \"$s\" = D ] || continue; " : "");
	if (system(cmd))
		fprintf(stderr, "#   (could not read them)\n");
}

static inline void stop_proc(struct proc *p, int sig)
{
	if (p->pid <= 0)
		return;
	kill(p->pid, sig);
	kill(p->pid, SIGCONT);	/* a stopped one too */
	if (sig != SIGKILL) {
		for (int i = 0; i < 100; i++) {
			if (waitpid(p->pid, NULL, WNOHANG) == p->pid) {
				p->pid = 0;
				break;
			}
			usleep(50000);
		}
		if (p->pid > 0)
			kill(p->pid, SIGKILL);
	}
	/* bounded: a process that cannot die (stuck in the kernel) is a
	 * finding to report, not a reason to hang the run */
	for (int i = 0; p->pid > 0 && i < 1200; i++) {
		if (waitpid(p->pid, NULL, WNOHANG) == p->pid)
			p->pid = 0;
		else
			usleep(50000);
	}
	if (p->pid > 0) {
		char tasks[64];

		procs_stuck++;
		fprintf(stderr, "# pid %d did not die within 60 s of SIGKILL; its threads' kernel stacks:\n",
			(int)p->pid);
		snprintf(tasks, sizeof(tasks), "/proc/%d/task/*", (int)p->pid);
		print_task_stacks(tasks, 0);
		/* and whoever holds what it waits for: every blocked task */
		fprintf(stderr, "# every task blocked in the kernel (D):\n");
		print_task_stacks("/proc/[0-9]*/task/[0-9]*", 1);
	}
	p->pid = 0;
	if (p->in >= 0)
		close(p->in);
	if (p->out >= 0)
		close(p->out);
	p->in = p->out = -1;
	p->len = 0;
}

/* A one-shot store_worker command (info, segments, nvmeof-register): its
 * last line. */
static inline int oneshot(const char *masters, char *out, size_t size, const char *fmt, ...)
{
	char cmd[1024], args[512];
	va_list ap;
	FILE *f;
	int st;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd), "%s --masters %s %s 2>/dev/null", worker_path(), masters, args);
	out[0] = 0;
	f = popen(cmd, "r");
	if (!f)
		return -errno;
	while (fgets(out, size, f))
		;
	st = pclose(f);
	out[strcspn(out, "\n")] = 0;
	return WIFEXITED(st) ? -WEXITSTATUS(st) : -1;
}

/* ---- the Jepsen-style runs' verdict (docs/chaos.md) ---- */

enum { CHAOS_OPS, CHAOS_VIOLATIONS, CHAOS_LOST_ACKED, CHAOS_BAD_CHECKSUM, CHAOS_FAULTS,
       CHAOS_FAILED, CHAOS_INFO, CHAOS_FIGURES };

/*
 * Joins dir's hist.*.jsonl and nemesis.jsonl into dir/history.jsonl and
 * has dschaos-check (beside the tests, in ../chaos) judge it.  Each line
 * it prints is echoed as a TAP comment; figure[] gets its figures (-1 for
 * one it did not print), why (when not NULL) the lines that are not
 * figures, its reasons, to repeat after the daemons' logs.  The checker's
 * exit status, -1 if it did not run.
 */
static inline int chaos_check(const char *dir, long long figure[CHAOS_FIGURES],
			      char *why, size_t why_len)
{
	static const char *const names[CHAOS_FIGURES] = {
		"chaos.ops", "chaos.violations", "chaos.lost_acked", "chaos.bad_checksum",
		"chaos.faults", "chaos.fail", "chaos.info",
	};
	char cmd[PATH_MAX * 2], line[512];
	FILE *f;
	int st;

	for (int i = 0; i < CHAOS_FIGURES; i++)
		figure[i] = -1;
	snprintf(cmd, sizeof(cmd), "cat %s/hist.*.jsonl %s/nemesis.jsonl > %s/history.jsonl && "
		 "%s --bench %s/history.jsonl 2>&1", dir, dir, dir,
		 beside("../chaos/dschaos-check"), dir);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		fprintf(stderr, "# %s\n", line);
		if (why && strncmp(line, "bench: ", 7)) {
			size_t used = strnlen(why, why_len);

			snprintf(why + used, why_len - used, "# %s\n", line);
		}
		for (int i = 0; i < CHAOS_FIGURES; i++) {
			size_t n = strlen(names[i]);

			if (!strncmp(line, "bench: ", 7) && !strncmp(line + 7, names[i], n) &&
			    line[7 + n] == ' ')
				figure[i] = atoll(line + 8 + n);
		}
	}
	st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/*
 * The operations the clients of a run in dir have logged so far (its
 * hist.<process>.jsonl): completions of any outcome (ok, fail, info; an
 * invocation alone is not one), the ok ones among them, and the broken
 * ones (fail or info; broken may be NULL).  Each history line is one
 * write(2) with O_APPEND, so a line without its newline is one being
 * written: not counted yet.
 */
static inline void chaos_logged(const char *dir, long *done, long *ok, long *broken)
{
	char pat[PATH_MAX], line[1024];
	glob_t g;

	*done = *ok = 0;
	if (broken)
		*broken = 0;
	snprintf(pat, sizeof(pat), "%s/hist.[0-9]*.jsonl", dir);
	if (glob(pat, 0, NULL, &g))
		return;
	for (size_t i = 0; i < g.gl_pathc; i++) {
		FILE *f = fopen(g.gl_pathv[i], "re");

		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			if (!strchr(line, '\n') || strstr(line, "\"type\":\"invoke\""))
				continue;
			(*done)++;
			if (strstr(line, "\"type\":\"ok\""))
				(*ok)++;
			else if (broken)
				(*broken)++;
		}
		fclose(f);
	}
	globfree(&g);
}

#endif
