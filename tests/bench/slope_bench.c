// SPDX-License-Identifier: BSD-2-Clause
/*
 * slope_bench: Slope's dirty tracking and live migration, each against
 * what userspace does without the module (`make bench B=slope`).
 *
 *   slope_bench dirty [--baselines-only] [PAGES [ROUNDS]]
 *	the cost of the first write to a page in a tracking epoch, on
 *	PAGES pages (4096) over ROUNDS epochs (7), the median per page:
 *	SLOPE_DIRTY's write-protect fault, mprotect + SIGSEGV, userfaultfd
 *	write-protect; and SLOPE_DIRTY's HARVEST mode (write + COLLECT).
 *	--baselines-only runs the last two, which need no module.
 *   slope_bench migrate [MIB...]
 *	migrations from node 1 to node 2 of this machine, of objects of
 *	each size (40 and 400 MiB; a size is skipped when memory does not
 *	hold two copies), clean and with a writer on 60% of the pages
 *	during the prefill; the first size clean in 2 MiB units too.  A
 *	receiver process on node 2 checks every object's content.
 *   slope_bench first [PAGES [RUNS]]
 *	the destination's first touch of an object's root right after the
 *	handover, PAGES pages (256) all dirty at the handover, the root on
 *	the last (the unit the pull reaches last), RUNS times each (5, the
 *	median): with the root pushed with the handover (MIGRATE's root)
 *	and without (the touch faults and waits for the pull).
 *   slope_bench constread [PAGES]
 *	dirty pages one tracking epoch sees after a read of every page (as
 *	mig_ptr::cget() reads) and after the same pass through the mutable
 *	path, which stores one word per page.
 *
 * Runs as root beside dsmem.ko, with nodes 1 and 2 up and connected
 * (scripts/bench.sh sets them up).  Prints one "bench: NAME VALUE UNIT"
 * line per figure; anything that fails (a module without Slope, content
 * that does not arrive intact) ends it with a message and status 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <linux/dsmem.h>
#include <linux/userfaultfd.h>

/* Slope's unit without DSMEM_SLOPE_HUGE (unit_shift 12): x86-64's page */
#define PAGE		4096UL
#define WORDS_PER_PAGE	(PAGE / sizeof(uint64_t))
#define MIB		(1UL << 20)
#define ROUNDS_MAX	64
/* bound on any one wait of a migration: the whole guest run has 1200 s */
#define WAIT_MS		600000
#define SRC_NODE	1
#define DST_NODE	2

__attribute__((noreturn, format(printf, 1, 2)))
static void die(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* one fprintf() is one write(): the sender's and the receiver's lines stay whole */
	fprintf(stderr, "slope_bench: %s\n", msg);
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, unsigned int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return v[n / 2];
}

/* One byte written to each page: the writes every tracker is timed on. */
static void touch(volatile char *p, unsigned long pages, char v)
{
	for (unsigned long i = 0; i < pages; i++)
		p[i * PAGE] = v;
}

/* ---- the module ---------------------------------------------------------- */

static void slope_ioctl(int fd, unsigned long cmd, void *arg, const char *what)
{
	if (!ioctl(fd, cmd, arg))
		return;
	if (errno == ENOTTY)
		die("%s: ENOTTY: this dsmem.ko has no Slope ioctls", what);
	die("%s: %s", what, strerror(errno));
}

/*
 * A descriptor attached to a local node.  A module without Slope is told
 * apart before anything else: it does not know MIG_GET at all, where one
 * with Slope refuses migration 0 with another errno.
 */
static int slope_open(uint32_t node)
{
	struct dsmem_ioc_attach at = { .node_id = node };
	struct dsmem_ioc_slope_mig probe = { 0 };
	int fd;

	fd = open("/dev/" DSMEM_DEVICE_NAME, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		die("open /dev/" DSMEM_DEVICE_NAME ": %s (is dsmem.ko loaded?)",
		    strerror(errno));
	if (ioctl(fd, DSMEM_IOC_ATTACH, &at))
		die("attach to node %u: %s", node, strerror(errno));
	if (ioctl(fd, DSMEM_IOC_SLOPE_MIG_GET, &probe) && errno == ENOTTY)
		die("this dsmem.ko has no Slope ioctls (DSMEM_IOC_SLOPE_MIG_GET: ENOTTY)");
	return fd;
}

/* the Slope range of this process, where the contract puts it */
static void slope_map(int fd, uint32_t node)
{
	if (mmap((void *)DSMEM_SLOPE_BASE, DSMEM_SLOPE_SIZE, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0) == MAP_FAILED)
		die("mmap of the Slope range on node %u: %s", node, strerror(errno));
}

static __u64 slope_alloc(int fd, __u64 len, __u32 flags)
{
	struct dsmem_ioc_slope_alloc a = { .len = len, .flags = flags };

	slope_ioctl(fd, DSMEM_IOC_SLOPE_ALLOC, &a, "SLOPE_ALLOC");
	return a.addr;
}

static void slope_free(int fd, __u64 addr, __u64 len)
{
	struct dsmem_slope_extent ext = { .addr = addr, .len = len };
	struct dsmem_ioc_slope_free f = { .extents = (uintptr_t)&ext, .nr = 1 };

	slope_ioctl(fd, DSMEM_IOC_SLOPE_FREE, &f, "SLOPE_FREE");
	if (f.freed != len)
		die("SLOPE_FREE gave back %llu bytes of %llu", f.freed, len);
}

/* ---- dirty: SLOPE_DIRTY ------------------------------------------------- */

static __u64 dirty_collect(int fd, __u64 id)
{
	struct dsmem_ioc_slope_dirty c = { .op = DSMEM_SLOPE_DIRTY_COLLECT, .id = id };

	slope_ioctl(fd, DSMEM_IOC_SLOPE_DIRTY, &c, "SLOPE_DIRTY COLLECT");
	return c.dirty;
}

/*
 * Median ns per page of one epoch's first writes.  Faulting mode: the
 * writes alone, each taking the module's write-protect fault; COLLECT,
 * which re-protects for the next epoch, is left out, as the baselines'
 * re-arming is.  HARVEST: no faults, so the writes and the COLLECT that
 * reads (and clears) the dirty bits together.
 */
static double dirty_slope(int fd, unsigned long pages, unsigned int rounds, bool harvest)
{
	struct dsmem_slope_extent ext = { .len = pages * PAGE };
	struct dsmem_ioc_slope_dirty d = {
		.op = DSMEM_SLOPE_DIRTY_START,
		.flags = harvest ? DSMEM_SLOPE_DIRTY_HARVEST : 0,
		.extents = (uintptr_t)&ext,
		.nr = 1,
	};
	const char *mode = harvest ? "harvest" : "faulting";
	double per_page[ROUNDS_MAX];
	volatile char *p;

	ext.addr = slope_alloc(fd, ext.len, 0);
	p = (volatile char *)(uintptr_t)ext.addr;
	/* backed first: a timed write then costs the tracking, not an allocation */
	touch(p, pages, 1);
	slope_ioctl(fd, DSMEM_IOC_SLOPE_DIRTY, &d, "SLOPE_DIRTY START");
	if (d.units != pages)
		die("SLOPE_DIRTY START (%s) tracks %llu units of %lu pages", mode, d.units, pages);
	for (unsigned int r = 0; r < rounds; r++) {
		uint64_t t0, t1;
		__u64 dirty;

		t0 = now_ns();
		touch(p, pages, (char)(r + 2));
		if (harvest) {
			dirty = dirty_collect(fd, d.id);
			t1 = now_ns();
		} else {
			t1 = now_ns();
			dirty = dirty_collect(fd, d.id);
		}
		if (dirty != pages)
			die("SLOPE_DIRTY (%s) round %u: COLLECT says %llu dirty, %lu pages were written",
			    mode, r, dirty, pages);
		per_page[r] = (double)(t1 - t0) / pages;
	}
	d = (struct dsmem_ioc_slope_dirty){ .op = DSMEM_SLOPE_DIRTY_STOP, .id = d.id };
	slope_ioctl(fd, DSMEM_IOC_SLOPE_DIRTY, &d, "SLOPE_DIRTY STOP");
	slope_free(fd, ext.addr, ext.len);
	return median(per_page, rounds);
}

/* ---- dirty: the baselines ---------------------------------------------- */

/* Private anonymous memory, every page backed, as the module's pages are. */
static char *map_anon(unsigned long pages)
{
	char *a = mmap(NULL, pages * PAGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (a == MAP_FAILED)
		die("mmap of %lu anonymous pages: %s", pages, strerror(errno));
	/*
	 * 4 KiB pages, as Slope's units: a transparent huge page would be
	 * split by the first mprotect or write-protect resolution anyway.
	 */
	if (madvise(a, pages * PAGE, MADV_NOHUGEPAGE))
		die("madvise(MADV_NOHUGEPAGE): %s", strerror(errno));
	touch(a, pages, 1);
	return a;
}

/* The area the SIGSEGV handler write-enables page by page. */
static struct {
	char *base;
	size_t len;
	volatile sig_atomic_t faults;
} segv_area;

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	char *a = si->si_addr;

	(void)uc;
	if (a < segv_area.base || a >= segv_area.base + segv_area.len ||
	    mprotect((void *)((uintptr_t)a & ~(PAGE - 1)), PAGE, PROT_READ | PROT_WRITE)) {
		/* not a tracked write: the retried access dies of it */
		signal(sig, SIG_DFL);
		return;
	}
	segv_area.faults++;
}

static long max_map_count(void)
{
	FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
	long n = -1;

	if (!f || fscanf(f, "%ld", &n) != 1)
		die("cannot read /proc/sys/vm/max_map_count");
	fclose(f);
	return n;
}

/*
 * The classic tracker: the area read-only, and a SIGSEGV handler that
 * write-enables the faulting page and records it.  Each such page is a
 * VMA of its own until its neighbours match it again, so the area must
 * stay well under vm.max_map_count.
 */
static double dirty_mprotect(unsigned long pages, unsigned int rounds)
{
	struct sigaction sa = { .sa_sigaction = on_segv, .sa_flags = SA_SIGINFO }, old;
	double per_page[ROUNDS_MAX];
	long maps = max_map_count();

	if ((long)pages >= maps / 2)
		die("mprotect baseline: %lu pages would split into more VMAs than "
		    "vm.max_map_count (%ld) allows", pages, maps);
	segv_area.base = map_anon(pages);
	segv_area.len = pages * PAGE;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSEGV, &sa, &old))
		die("sigaction: %s", strerror(errno));
	for (unsigned int r = 0; r < rounds; r++) {
		uint64_t t0, t1;

		if (mprotect(segv_area.base, segv_area.len, PROT_READ))
			die("mprotect(PROT_READ): %s", strerror(errno));
		segv_area.faults = 0;
		t0 = now_ns();
		touch(segv_area.base, pages, (char)(r + 2));
		t1 = now_ns();
		if ((unsigned long)segv_area.faults != pages)
			die("mprotect baseline round %u: %ld faults for %lu pages",
			    r, (long)segv_area.faults, pages);
		per_page[r] = (double)(t1 - t0) / pages;
	}
	sigaction(SIGSEGV, &old, NULL);
	munmap(segv_area.base, segv_area.len);
	return median(per_page, rounds);
}

struct uffd_server {
	int uffd;
	atomic_ulong faults;
};

/*
 * The userfaultfd tracker's other half: each write-protect fault is
 * recorded and resolved by write-enabling its page, which wakes the
 * writer.  A blocking read() and one ioctl per fault, the least a
 * handler can do; pthread_cancel() ends it in that read().
 */
static void *uffd_serve(void *arg)
{
	struct uffd_server *s = arg;
	struct uffd_msg msg;

	for (;;) {
		struct uffdio_writeprotect wp = { .range.len = PAGE };	/* mode 0 */
		ssize_t n = read(s->uffd, &msg, sizeof(msg));

		if (n < 0 && errno == EINTR)
			continue;
		if (n != sizeof(msg))
			die("read of the userfaultfd: %s", n < 0 ? strerror(errno) : "short");
		if (msg.event != UFFD_EVENT_PAGEFAULT ||
		    !(msg.arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP))
			die("userfaultfd: unexpected event %u (flags %#llx)", msg.event,
			    msg.event == UFFD_EVENT_PAGEFAULT ? msg.arg.pagefault.flags : 0);
		/* counted before the writer is let go, so that it sees the count */
		atomic_fetch_add(&s->faults, 1);
		wp.range.start = msg.arg.pagefault.address & ~(PAGE - 1);
		if (ioctl(s->uffd, UFFDIO_WRITEPROTECT, &wp))
			die("UFFDIO_WRITEPROTECT (resolve): %s", strerror(errno));
	}
}

static double dirty_uffd(unsigned long pages, unsigned int rounds)
{
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_PAGEFAULT_FLAG_WP };
	struct uffd_server s = { .faults = 0 };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_WP };
	double per_page[ROUNDS_MAX];
	pthread_t t;
	char *a;

	/*
	 * Faults from user mode only: all that is tracked here, and such a
	 * descriptor needs no privilege whatever vm.unprivileged_userfaultfd
	 * says.
	 */
	s.uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);
	if (s.uffd < 0)
		die("userfaultfd: %s", strerror(errno));
	if (ioctl(s.uffd, UFFDIO_API, &api))
		die("UFFDIO_API with UFFD_FEATURE_PAGEFAULT_FLAG_WP: %s", strerror(errno));
	a = map_anon(pages);
	reg.range.start = (uintptr_t)a;
	reg.range.len = pages * PAGE;
	if (ioctl(s.uffd, UFFDIO_REGISTER, &reg))
		die("UFFDIO_REGISTER (write-protect mode): %s", strerror(errno));
	if (!(reg.ioctls & (1ULL << _UFFDIO_WRITEPROTECT)))
		die("UFFDIO_REGISTER: no UFFDIO_WRITEPROTECT on anonymous memory");
	errno = pthread_create(&t, NULL, uffd_serve, &s);
	if (errno)
		die("pthread_create: %s", strerror(errno));
	for (unsigned int r = 0; r < rounds; r++) {
		struct uffdio_writeprotect wp = {
			.range = reg.range,
			.mode = UFFDIO_WRITEPROTECT_MODE_WP,
		};
		uint64_t t0, t1;
		unsigned long faults;

		if (ioctl(s.uffd, UFFDIO_WRITEPROTECT, &wp))
			die("UFFDIO_WRITEPROTECT (protect): %s", strerror(errno));
		atomic_store(&s.faults, 0);
		t0 = now_ns();
		touch(a, pages, (char)(r + 2));
		t1 = now_ns();
		faults = atomic_load(&s.faults);
		if (faults != pages)
			die("userfaultfd baseline round %u: %lu faults for %lu pages", r, faults, pages);
		per_page[r] = (double)(t1 - t0) / pages;
	}
	pthread_cancel(t);
	pthread_join(t, NULL);
	close(s.uffd);
	munmap(a, pages * PAGE);
	return median(per_page, rounds);
}

/*
 * Every thread of the dirty bench on the CPU it started on.  A
 * userfaultfd fault then hands over to the handler thread and back by a
 * switch on that CPU, the handler's cheapest path: on another CPU it
 * costs an IPI, and under TCG the idle CPU's wake-up waits up to a timer
 * tick (4 ms), which would be measured instead of userfaultfd.
 */
static void pin_to_this_cpu(void)
{
	int cpu = sched_getcpu();
	cpu_set_t set;

	if (cpu < 0)
		die("sched_getcpu: %s", strerror(errno));
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("sched_setaffinity: %s", strerror(errno));
}

static int cmd_dirty(int argc, char **argv)
{
	unsigned long pages = 4096;
	unsigned int rounds = 7;
	bool baselines_only = false;
	double mprot, uffd;
	int i = 0;

	if (argc > 0 && !strcmp(argv[0], "--baselines-only")) {
		baselines_only = true;
		i++;
	}
	if (argc > i)
		pages = strtoul(argv[i++], NULL, 0);
	if (argc > i)
		rounds = (unsigned int)strtoul(argv[i++], NULL, 0);
	if (argc > i || !pages || !rounds || rounds > ROUNDS_MAX)
		die("usage: slope_bench dirty [--baselines-only] [PAGES [ROUNDS (1..%d)]]",
		    ROUNDS_MAX);

	pin_to_this_cpu();
	/* the baselines first: they are printed even where the module fails */
	mprot = dirty_mprotect(pages, rounds);
	uffd = dirty_uffd(pages, rounds);
	printf("bench: slope.mprotect_fault_ns %.1f ns\n", mprot);
	printf("bench: slope.uffd_wp_fault_ns %.1f ns\n", uffd);
	fflush(stdout);
	if (!baselines_only) {
		int fd = slope_open(SRC_NODE);
		double fault, harvest;

		slope_map(fd, SRC_NODE);
		fault = dirty_slope(fd, pages, rounds, false);
		harvest = dirty_slope(fd, pages, rounds, true);
		printf("bench: slope.dirty_fault_ns %.1f ns\n", fault);
		printf("bench: slope.dirty_harvest_ns %.1f ns\n", harvest);
		printf("bench: slope.dirty_fault.ratio_vs_uffd_wp %.2f x\n", fault / uffd);
		printf("bench: slope.dirty_fault.ratio_vs_mprotect %.2f x\n", fault / mprot);
		close(fd);
	}
	return 0;
}

/* ---- migrate ----------------------------------------------------------- */

/* splitmix64's finalizer: the content of a word from its address */
static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* FNV-1a over the words: in order, so a page in the wrong place shows */
static uint64_t checksum(const uint64_t *w, size_t words)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < words; i++)
		h = (h ^ w[i]) * 0x100000001b3ULL;
	return h;
}

/* what the sender tells the receiver just before it hands an object over */
struct mig_expect {
	uint64_t addr;
	uint64_t len;
	uint64_t sum;		/* of the content at the handover */
	uint64_t clean;		/* 1: the content is still the fill pattern */
};

static void write_full(int fd, const void *buf, size_t len, const char *what)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die("%s: %s", what, strerror(errno));
		p += n;
		len -= (size_t)n;
	}
}

/* false at end of file before the first byte */
static bool read_full(int fd, void *buf, size_t len, const char *what)
{
	char *p = buf;
	size_t left = len;

	while (left) {
		ssize_t n = read(fd, p, left);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die("%s: %s", what, strerror(errno));
		if (!n) {
			if (left == len)
				return false;
			die("%s: truncated", what);
		}
		p += n;
		left -= (size_t)n;
	}
	return true;
}

/*
 * Waits until the migration is DONE (FAILED is fatal) and forgets it;
 * *m comes in with its current state and goes out with its figures.
 */
static void mig_finish(int fd, __u64 id, struct dsmem_ioc_slope_mig *m, const char *side)
{
	struct dsmem_ioc_slope_mig rel = { .id = id, .flags = DSMEM_SLOPE_MIG_RELEASE };

	while (m->state != DSMEM_SLOPE_MIG_DONE) {
		__u32 state = m->state;

		if (state == DSMEM_SLOPE_MIG_FAILED)
			die("%s: migration %llu failed: %s", side, id, strerror(-m->error));
		*m = (struct dsmem_ioc_slope_mig){
			.id = id,
			.flags = DSMEM_SLOPE_MIG_WAIT,
			.state = state,
			.timeout_ms = WAIT_MS,
		};
		slope_ioctl(fd, DSMEM_IOC_SLOPE_MIG_GET, m, "MIG_GET WAIT (until DONE)");
	}
	slope_ioctl(fd, DSMEM_IOC_SLOPE_MIG_GET, &rel, "MIG_GET RELEASE");
}

/* where a clean object first differs from the fill pattern, for the report */
static void report_first_difference(const uint64_t *w, size_t words)
{
	for (size_t i = 0; i < words; i++) {
		uint64_t want = mix64((uintptr_t)&w[i]);

		if (w[i] != want) {
			fprintf(stderr, "slope_bench: receiver: first difference at %p "
				"(page %zu of the object): %#lx, expected %#lx\n",
				(void *)&w[i], i / WORDS_PER_PAGE, w[i], want);
			return;
		}
	}
}

/*
 * The destination: for each object the sender announces, receives the
 * migration, waits until every page has arrived, checks the content
 * against the sender's checksum and frees the object; the checksum it
 * found goes back to the sender.
 */
static int receiver(int from_sender, int to_sender)
{
	int fd = slope_open(DST_NODE);
	struct mig_expect e;

	slope_map(fd, DST_NODE);

	while (read_full(from_sender, &e, sizeof(e), "receiver: read from the sender")) {
		struct dsmem_ioc_slope_mig m = {
			.flags = DSMEM_SLOPE_MIG_WAIT,
			.timeout_ms = WAIT_MS,
		};
		const uint64_t *w = (const uint64_t *)(uintptr_t)e.addr;
		uint64_t sum;

		slope_ioctl(fd, DSMEM_IOC_SLOPE_RECV, &m, "SLOPE_RECV");
		if (m.cookie != e.addr || m.pages * PAGE != e.len)
			die("receiver: migration %llu brings cookie %#llx, %llu pages; "
			    "the sender sent %#lx, %lu pages", m.id, m.cookie, m.pages,
			    e.addr, e.len / PAGE);
		/* every page first: the sender's figures then are the transfer's own */
		mig_finish(fd, m.id, &m, "receiver");
		sum = checksum(w, e.len / sizeof(*w));
		if (sum != e.sum) {
			fprintf(stderr, "slope_bench: receiver: CONTENT MISMATCH: %lu MiB at %#lx "
				"arrived with checksum %#lx, the sender had %#lx\n",
				e.len / MIB, e.addr, sum, e.sum);
			if (e.clean)
				report_first_difference(w, e.len / sizeof(*w));
			exit(1);
		}
		slope_free(fd, e.addr, e.len);
		write_full(to_sender, &sum, sizeof(sum), "receiver: write to the sender");
	}
	return 0;
}

/* The writer of a dirty60 run: 3 pages in 5, again and again. */
struct writer {
	uint64_t *w;
	size_t pages;
	atomic_bool stop;
};

static void *write_60(void *arg)
{
	struct writer *x = arg;

	for (uint64_t gen = 1;; gen++) {
		for (size_t pg = 0; pg < x->pages; pg++) {
			if (pg % 5 >= 3)
				continue;
			if (atomic_load_explicit(&x->stop, memory_order_relaxed))
				return NULL;
			x->w[pg * WORDS_PER_PAGE + gen % WORDS_PER_PAGE] = mix64(gen ^ pg);
		}
	}
}

struct mig_run {
	char name[32];		/* of its figures */
	uint64_t len;
	bool huge;		/* 2 MiB units */
	bool dirty60;		/* a writer during the prefill */
};

/*
 * One migration from the sender's side: allocate, fill, MIGRATE (with
 * the writer running for dirty60), wait for STOPPING, stop the writer,
 * tell the receiver the checksum, MIG_STOP, wait for DONE, and hear
 * from the receiver that the content arrived.  *m gets the figures.
 */
static void migrate_one(int fd, int to_recv, int from_recv, const struct mig_run *run,
			struct dsmem_ioc_slope_mig *m)
{
	__u32 flags = run->huge ? DSMEM_SLOPE_HUGE : 0;
	struct dsmem_slope_extent ext = { .len = run->len };
	struct dsmem_ioc_slope_migrate mg = {
		.extents = (uintptr_t)&ext,
		.nr = 1,
		.dst_node = DST_NODE,
		.flags = flags,
	};
	struct writer wr = { .pages = run->len / PAGE, .stop = false };
	struct dsmem_ioc_slope_mig stop = { 0 };
	struct mig_expect e;
	uint64_t *w, sum;
	pthread_t t;

	ext.addr = slope_alloc(fd, run->len, flags);
	w = (uint64_t *)(uintptr_t)ext.addr;
	for (size_t i = 0; i < run->len / sizeof(*w); i++)
		w[i] = mix64((uintptr_t)&w[i]);
	mg.cookie = ext.addr;
	if (run->dirty60) {
		wr.w = w;
		errno = pthread_create(&t, NULL, write_60, &wr);
		if (errno)
			die("pthread_create: %s", strerror(errno));
	}
	slope_ioctl(fd, DSMEM_IOC_SLOPE_MIGRATE, &mg, "SLOPE_MIGRATE");
	*m = (struct dsmem_ioc_slope_mig){
		.id = mg.id,
		.flags = DSMEM_SLOPE_MIG_WAIT,
		.state = DSMEM_SLOPE_MIG_PREFILL,
		.timeout_ms = WAIT_MS,
	};
	slope_ioctl(fd, DSMEM_IOC_SLOPE_MIG_GET, m, "MIG_GET WAIT (for the end of the prefill)");
	if (run->dirty60) {
		atomic_store(&wr.stop, true);
		pthread_join(t, NULL);
	}
	if (m->state != DSMEM_SLOPE_MIG_STOPPING)
		die("%s: the prefill ended in state %u (error %d), not STOPPING",
		    run->name, m->state, m->error);

	/* the content as it is handed over; after MIG_STOP it is gone here */
	e = (struct mig_expect){
		.addr = ext.addr,
		.len = run->len,
		.sum = checksum(w, run->len / sizeof(*w)),
		.clean = !run->dirty60,
	};
	write_full(to_recv, &e, sizeof(e), "write to the receiver");
	stop.id = mg.id;
	slope_ioctl(fd, DSMEM_IOC_SLOPE_MIG_STOP, &stop, "MIG_STOP");
	if (stop.state != DSMEM_SLOPE_MIG_HANDED_OVER && stop.state != DSMEM_SLOPE_MIG_DONE)
		die("%s: MIG_STOP left the migration in state %u (error %d)",
		    run->name, stop.state, stop.error);
	*m = stop;
	mig_finish(fd, mg.id, m, run->name);
	if (!read_full(from_recv, &sum, sizeof(sum), "read from the receiver"))
		die("%s: the receiver exited without confirming the content (see above)",
		    run->name);
	if (sum != e.sum)
		die("%s: the receiver found checksum %#lx, the sender had %#lx",
		    run->name, sum, e.sum);
}

static unsigned long mem_available_mib(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	unsigned long kib = 0;
	char line[128];

	if (!f)
		die("cannot open /proc/meminfo: %s", strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %lu kB", &kib) == 1)
			break;
	fclose(f);
	return kib / 1024;
}

/*
 * MiB per second (2^20 bytes, as perftest's "MB/sec") of the prefill's
 * first round, which writes every unit once: the copy itself, without
 * the set-up before it (pages allocated and registered at the
 * destination) that perftest does not time either
 */
static double prefill_mib_s(const struct dsmem_ioc_slope_mig *m)
{
	return (double)(m->pages * PAGE) / MIB / ((double)m->first_round_ns / 1e9);
}

#define SIZES_MAX	8

/*
 * Fork the receiving node's process, running fn(from_sender, to_sender);
 * the sender keeps to_recv[1] and from_recv[0].  Before the sender maps
 * the range: the receiver maps it on its own.
 */
static pid_t start_receiver(int fd, int (*fn)(int from_sender, int to_sender),
			    int to_recv[2], int from_recv[2])
{
	pid_t pid;

	if (pipe2(to_recv, O_CLOEXEC) || pipe2(from_recv, O_CLOEXEC))
		die("pipe: %s", strerror(errno));
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (!pid) {
		/* no receiver left waiting for a sender that died */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() == 1)
			_exit(1);
		close(fd);
		close(to_recv[1]);
		close(from_recv[0]);
		exit(fn(to_recv[0], from_recv[1]));
	}
	close(to_recv[0]);
	close(from_recv[1]);
	/* a receiver that died shows as EPIPE, told apart by the caller, not as a signal */
	signal(SIGPIPE, SIG_IGN);
	return pid;
}

/*
 * Each size clean and dirty60, the first one in 2 MiB units too; the
 * first size's clean runs give the prefill bandwidths.
 */
static int cmd_migrate(int argc, char **argv)
{
	static const char *const kinds[] = { "clean", "clean_2M", "dirty60" };
	unsigned long mib[SIZES_MAX] = { 40, 400 };
	unsigned int nsizes = argc ? (unsigned int)argc : 2;
	/* both copies of the object at once, and room for everything else */
	unsigned long avail = mem_available_mib(), margin = 256;
	int to_recv[2], from_recv[2], status, fd;
	pid_t pid;

	if (argc > SIZES_MAX)
		die("usage: slope_bench migrate [MIB...] (at most %d sizes)", SIZES_MAX);
	for (int i = 0; i < argc; i++) {
		char *end;

		mib[i] = strtoul(argv[i], &end, 0);
		if (*end || !mib[i] || mib[i] % (DSMEM_SLOPE_HUGE_SIZE / MIB))
			die("migrate: size '%s' is not a positive multiple of 2 (MiB)", argv[i]);
	}

	/* a module without Slope is reported once, by the sender */
	fd = slope_open(SRC_NODE);
	pid = start_receiver(fd, receiver, to_recv, from_recv);

	slope_map(fd, SRC_NODE);
	for (unsigned int s = 0; s < nsizes; s++) {
		for (unsigned int k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
			struct mig_run run = {
				.len = mib[s] * MIB,
				.huge = k == 1,
				.dirty60 = k == 2,
			};
			struct dsmem_ioc_slope_mig m;

			if (run.huge && s)
				continue;
			snprintf(run.name, sizeof(run.name), "%luM_%s", mib[s], kinds[k]);
			if (2 * mib[s] + margin > avail) {
				fprintf(stderr, "slope_bench: %s skipped: MemAvailable is %lu MiB, "
					"it needs %lu\n", run.name, avail, 2 * mib[s] + margin);
				continue;
			}
			migrate_one(fd, to_recv[1], from_recv[0], &run, &m);
			if (!s && !run.dirty60)
				printf("bench: slope.prefill_bw_%s %.1f MiB/s\n",
				       run.huge ? "2M" : "4K", prefill_mib_s(&m));
			printf("bench: slope.no_owner_ms_%s %.3f ms\n", run.name, m.no_owner_ns / 1e6);
			printf("bench: slope.migrate_ms_%s %.3f ms\n", run.name, m.total_ns / 1e6);
			if (run.dirty60) {
				/* what the writer cost: rounds run, units left for the pull */
				printf("bench: slope.rounds_%s %u rounds\n", run.name, m.rounds);
				printf("bench: slope.handover_units_%s %llu units\n", run.name,
				       m.dirty_units);
			}
			fflush(stdout);
		}
	}
	close(fd);
	close(to_recv[1]);
	if (waitpid(pid, &status, 0) != pid)
		die("waitpid: %s", strerror(errno));
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		die("the receiver failed (status %#x)", status);
	return 0;
}

/* ---- first: the destination's first touch after the handover --------- */

#define FIRST_RUNS_MAX	32

struct first_seen {
	uint64_t ns;		/* RECV returned .. the root's word was read */
	uint64_t fault_waits;	/* of the migration, right after that read */
};

static int first_receiver(int from_sender, int to_sender)
{
	int fd = slope_open(DST_NODE);
	__u64 root;

	slope_map(fd, DST_NODE);
	while (read_full(from_sender, &root, sizeof(root), "first: receiver: read")) {
		struct dsmem_ioc_slope_mig m = {
			.flags = DSMEM_SLOPE_MIG_WAIT,
			.timeout_ms = WAIT_MS,
		};
		struct dsmem_ioc_slope_mig g = { 0 };
		struct first_seen seen;
		uint64_t t0, v;

		slope_ioctl(fd, DSMEM_IOC_SLOPE_RECV, &m, "SLOPE_RECV");
		t0 = now_ns();
		v = *(volatile uint64_t *)(uintptr_t)root;
		seen.ns = now_ns() - t0;
		if (v != mix64(root ^ 1))
			die("first: receiver: the root holds %#lx, not what was written", v);
		g.id = m.id;
		slope_ioctl(fd, DSMEM_IOC_SLOPE_MIG_GET, &g, "MIG_GET");
		seen.fault_waits = g.fault_waits;
		mig_finish(fd, m.id, &g, "first: receiver");
		slope_free(fd, m.cookie, m.pages * PAGE);
		write_full(to_sender, &seen, sizeof(seen), "first: receiver: write");
	}
	return 0;
}

/* One migration of pages pages, every one dirty at the handover. */
static void first_one(int fd, int to_recv, int from_recv, unsigned long pages, bool push,
		      struct first_seen *seen)
{
	struct dsmem_slope_extent ext = { .len = pages * PAGE };
	struct dsmem_ioc_slope_migrate mg = { .extents = (uintptr_t)&ext, .nr = 1,
					      .dst_node = DST_NODE };
	struct dsmem_ioc_slope_mig m, stop = { 0 };
	uint64_t *w;
	__u64 root;

	ext.addr = slope_alloc(fd, ext.len, 0);
	w = (uint64_t *)(uintptr_t)ext.addr;
	root = ext.addr + (pages - 1) * PAGE;
	touch((volatile char *)w, pages, 1);
	mg.cookie = ext.addr;
	mg.root = push ? root : 0;
	slope_ioctl(fd, DSMEM_IOC_SLOPE_MIGRATE, &mg, "SLOPE_MIGRATE");
	m = (struct dsmem_ioc_slope_mig){ .id = mg.id, .flags = DSMEM_SLOPE_MIG_WAIT,
					  .state = DSMEM_SLOPE_MIG_PREFILL, .timeout_ms = WAIT_MS };
	slope_ioctl(fd, DSMEM_IOC_SLOPE_MIG_GET, &m, "MIG_GET WAIT (for STOPPING)");
	if (m.state != DSMEM_SLOPE_MIG_STOPPING)
		die("first: the prefill ended in state %u (error %d)", m.state, m.error);
	touch((volatile char *)w, pages, 2);	/* every unit dirty */
	*(volatile uint64_t *)(uintptr_t)root = mix64(root ^ 1);
	write_full(to_recv, &root, sizeof(root), "first: write to the receiver");
	stop.id = mg.id;
	slope_ioctl(fd, DSMEM_IOC_SLOPE_MIG_STOP, &stop, "MIG_STOP");
	if (stop.dirty_units != pages - (push ? 2 : 0))
		die("first: %llu units dirty at the handover, expected %lu", stop.dirty_units,
		    pages - (push ? 2 : 0));
	mig_finish(fd, mg.id, &stop, "first");
	if (!read_full(from_recv, seen, sizeof(*seen), "first: read from the receiver"))
		die("first: the receiver exited (see above)");
}

static int cmd_first(int argc, char **argv)
{
	unsigned long pages = argc > 0 ? strtoul(argv[0], NULL, 0) : 256;
	unsigned int runs = argc > 1 ? (unsigned int)strtoul(argv[1], NULL, 0) : 5;
	double ns[2][FIRST_RUNS_MAX];
	uint64_t waits[2] = { 0, 0 };
	int to_recv[2], from_recv[2], status, fd;
	pid_t pid;

	if (pages < 2 || pages > 65536 || !runs || runs > FIRST_RUNS_MAX)
		die("usage: slope_bench first [PAGES (2..65536) [RUNS (1..%d)]]", FIRST_RUNS_MAX);
	fd = slope_open(SRC_NODE);
	pid = start_receiver(fd, first_receiver, to_recv, from_recv);
	slope_map(fd, SRC_NODE);
	/* interleaved, so that a guest's drift weighs on both alike */
	for (unsigned int r = 0; r < runs; r++) {
		for (int push = 0; push < 2; push++) {
			struct first_seen seen;

			first_one(fd, to_recv[1], from_recv[0], pages, push, &seen);
			ns[push][r] = (double)seen.ns;
			waits[push] += seen.fault_waits;
		}
	}
	close(fd);
	close(to_recv[1]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		die("first: the receiver failed (status %#x)", status);
	const double fault = median(ns[0], runs), pushed = median(ns[1], runs);

	printf("bench: slope.first_access_ns.fault %.0f ns\n", fault);
	printf("bench: slope.first_access_ns.root_push %.0f ns\n", pushed);
	printf("bench: slope.first_access.ratio_vs_fault %.3f x\n", pushed / fault);
	printf("bench: slope.first_access.fault_waits.fault %.1f waits\n", (double)waits[0] / runs);
	printf("bench: slope.first_access.fault_waits.root_push %.1f waits\n",
	       (double)waits[1] / runs);
	return 0;
}

/* ---- constread: dirty pages of a read-only pass ------------------------ */

static int cmd_constread(int argc, char **argv)
{
	unsigned long pages = argc > 0 ? strtoul(argv[0], NULL, 0) : 4096;
	struct dsmem_slope_extent ext = { .len = pages * PAGE };
	struct dsmem_ioc_slope_dirty d = { .op = DSMEM_SLOPE_DIRTY_START,
					   .extents = (uintptr_t)&ext, .nr = 1 };
	volatile uint64_t *w;
	uint64_t sum = 0;
	__u64 ro, mut;
	int fd;

	if (!pages || pages > (1UL << 18))
		die("usage: slope_bench constread [PAGES (1..262144)]");
	fd = slope_open(SRC_NODE);
	slope_map(fd, SRC_NODE);
	ext.addr = slope_alloc(fd, ext.len, 0);
	w = (volatile uint64_t *)(uintptr_t)ext.addr;
	touch((volatile char *)w, pages, 1);
	slope_ioctl(fd, DSMEM_IOC_SLOPE_DIRTY, &d, "SLOPE_DIRTY START");
	dirty_collect(fd, d.id);
	/* the const path: every page read, none written */
	for (unsigned long p = 0; p < pages; p++)
		sum += w[p * WORDS_PER_PAGE + (p % WORDS_PER_PAGE)];
	ro = dirty_collect(fd, d.id);
	/* the mutable path: the same pass, storing one word per page */
	for (unsigned long p = 0; p < pages; p++)
		w[p * WORDS_PER_PAGE + (p % WORDS_PER_PAGE)] += 1;
	mut = dirty_collect(fd, d.id);
	d = (struct dsmem_ioc_slope_dirty){ .op = DSMEM_SLOPE_DIRTY_STOP, .id = d.id };
	slope_ioctl(fd, DSMEM_IOC_SLOPE_DIRTY, &d, "SLOPE_DIRTY STOP");
	slope_free(fd, ext.addr, ext.len);
	close(fd);
	if (mut != pages)
		die("constread: the mutable pass dirtied %llu of %lu pages", mut, pages);
	printf("bench: slope.const_read.dirty_pages %llu pages\n", ro);
	printf("bench: slope.mut_read.dirty_pages %llu pages\n", mut);
	printf("bench: slope.const_read.dirty_ratio_vs_mut %.3f x\n", (double)ro / (double)mut);
	(void)sum;	/* the reads are volatile: they happen */
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "first"))
		return cmd_first(argc - 2, argv + 2);
	if (argc >= 2 && !strcmp(argv[1], "constread"))
		return cmd_constread(argc - 2, argv + 2);
	if (argc >= 2 && !strcmp(argv[1], "dirty"))
		return cmd_dirty(argc - 2, argv + 2);
	if (argc >= 2 && !strcmp(argv[1], "migrate"))
		return cmd_migrate(argc - 2, argv + 2);
	fprintf(stderr, "usage: slope_bench dirty [--baselines-only] [PAGES [ROUNDS]]\n"
			"       slope_bench migrate [MIB...]\n"
			"       slope_bench first [PAGES [RUNS]]\n"
			"       slope_bench constread [PAGES]\n");
	return 2;
}
