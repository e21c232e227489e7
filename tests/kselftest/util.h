/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Helpers for dsmem's kernel selftests.  They run as root inside a test
 * guest started by scripts/guest, which exports DSMEM_KO, DSMEM_NETDEV,
 * DSMEM_SPARE_NETDEV, DSMEM_PEER_ADDR, DSMEM_GUEST_ID and DSMEM_RUN_DIR
 * (scripts/guest --help lists the rest: rxe1's DSMEM_*2).
 */
#ifndef DSMEM_TEST_UTIL_H
#define DSMEM_TEST_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* getenv() that names the missing variable on stderr */
const char *env_or_die(const char *name);
/* system() with a formatted command; returns the exit status, or -1 */
int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
bool module_loaded(void);
int module_load(void);
int module_unload(void);
/* path of the dsctl binary beside the test binaries */
const char *dsctl_path(void);
/* read a whole small file into buf (NUL-terminated); -errno on failure */
int read_file(const char *path, char *buf, size_t size);
unsigned long kernel_taint(void);
/* a numeric or bool (1/0) parameter of dsmem.ko (/sys/module/dsmem/parameters):
 * 0 or -errno */
/* cgroup v2, for the memory controller's charges */
#define CG_ROOT		"/sys/fs/cgroup"
int cg_write(const char *path, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The number after key in a flat-keyed file of cgroup cg ("" for a lone number). */
uint64_t cg_read(const char *cg, const char *file, const char *key);
/*
 * Cgroup cg (a path) of limit bytes with the memory controller, under a
 * cgroup2 root mounted here if the guest has none: 0, -ENODEV for a
 * kernel without memory cgroups (the debug kernel is built without
 * them), or -errno.
 */
int cg_make(const char *cg, uint64_t limit);
int param_get(const char *name, uint64_t *v);
int param_set(const char *name, uint64_t v);
/*
 * fork() with the child as uid and gid 65534, without privilege (it exits
 * 10 if it cannot drop it): 0 in the child, its pid or -1 in the parent.
 * child_step() waits for it: its exit status (0, or the step that
 * failed), -1 if it did not exit.
 */
pid_t fork_nobody(void);
int child_step(pid_t pid);
/* the guest runs the debug kernel (scripts/guest --kernel debug) */
bool debug_kernel(void);
/*
 * The tests a fixture skips on the debug kernel, which runs everything
 * several times slower, when they only scale up or time what others
 * there cover (docs/testing.md lists them): decided in the fixture's
 * set-up, before it does anything (set-up and tear-down alone take tens
 * of seconds there).  The fixture keeps the reason in self->heavy, its
 * set-up and tear-down return at once when it is set, and the test body
 * starts with SKIP_IF_HEAVY().
 */
struct heavy_test {
	const char *test, *why;
};

/* why test is skipped here (NULL: it runs) */
const char *heavy_skip(const struct heavy_test *list, size_t n, const char *test);
#define SKIP_IF_HEAVY()							\
	do {								\
		if (self->heavy)					\
			SKIP(return, "debug kernel: %s", self->heavy);	\
	} while (0)
/* CLOCK_MONOTONIC in milliseconds */
int64_t now_ms(void);

#include <linux/dsmem.h>

/* A descriptor's shared rings, mapped (include/uapi/linux/dsmem.h). */
struct test_ring {
	int fd;
	struct dsmem_ioc_ring_setup s;	/* as DSMEM_IOC_RING_SETUP answered */
	uint8_t *sq_mem, *cq_mem;
	struct dsmem_ring_ctl *sq, *cq;
	struct dsmem_sqe *sqes;
	struct dsmem_cqe *cqes;
	uint32_t sq_tail, cq_head;	/* ours */
};

/* Map the rings r->s describes on fd: 0 or -errno. */
int test_ring_map(struct test_ring *r, int fd);
void test_ring_unmap(struct test_ring *r);
struct ds_ctx;
/* a module counter by name (dsctl stats), through ctx or a context of its
 * own (ctx NULL); ~0 if it cannot be read */
uint64_t stat_value(struct ds_ctx *ctx, const char *name);

#define TRACEFS "/sys/kernel/tracing"
/* mount tracefs if it is not; 0 when TRACEFS/trace is there */
int tracefs_mount(void);
/* write val to TRACEFS/file; -errno on failure */
int tracefs_write(const char *file, const char *val);
/*
 * Enable an event ("kmem/kmalloc") for good: a no-op when tests/run
 * enabled it at boot.  Tests never disable one (tests/run says why); they
 * start and stop recording with tracefs_write("tracing_on", ...).
 */
int tracefs_event_enable(const char *event);
/* [start, end) of a function of a loaded module, from /proc/kallsyms */
int kallsyms_func_range(const char *module, const char *func, unsigned long *start,
			unsigned long *end);

/*
 * Raw requests to the dsmem family: built with libnl, sent as exact bytes
 * on a plain socket (extended ACKs on) so that tests can break them.
 */
struct nl_msg;
struct raw_nl {
	int fd;
	int family;
};
int raw_open(struct raw_nl *r);
/* send m (and free it); the kernel's answer as raw_answer() gives it */
int raw_send(struct raw_nl *r, struct nl_msg *m, char *text, size_t tlen);
/*
 * Read until the ACK, the error or the end of a dump: the kernel's error
 * (0 on success, including from NLMSG_DONE), or -errno of recv; text, if
 * given, receives the extended-ack message.
 */
int raw_answer(int fd, char *text, size_t tlen);

/*
 * The key every test node proves, "cluster" (the default of ds_node_add
 * and dsctl): the same bytes in every guest, so that two guests' nodes
 * authenticate each other.  Installed (again, replacing) before each node
 * is added, since a test may have reloaded the module in between.
 */
#define TEST_KEY_NAME	"cluster"
struct ds_ctx;
int test_key_add(struct ds_ctx *ctx);
/* ds_node_add, after test_key_add */
int test_node_add(struct ds_ctx *ctx, uint32_t id, const char *dev, uint16_t port);
/*
 * What `dsctl peer add` on both sides does: node dials remote (a node of
 * this guest) at addr:port, as that node id, and remote admits node from
 * addr (a listen peer, added once).  *peer may be NULL.
 */
int test_peer_add(struct ds_ctx *ctx, uint32_t node, const char *addr, uint16_t port,
		  uint32_t remote, uint32_t *peer);

/* Until peer of node is up and sees n remote segments (~20 s): 0 or
 * -ETIMEDOUT. */
struct ds_ctx;
int wait_rsegs(struct ds_ctx *ctx, uint32_t node, uint32_t peer, uint32_t n);
/* Until peer of node is up with this many paths (~20 s): 0 or -ETIMEDOUT. */
int wait_paths(struct ds_ctx *ctx, uint32_t node, uint32_t peer, unsigned int paths);
/* A hw counter of a device's port 1 (rxe's names), or 0. */
uint64_t rxe_counter(const char *dev, const char *name);
/* Packets a device's port 1 sent, or 0. */
uint64_t rxe_sent_pkts(const char *dev);

/* Next event of this type for this device name, bounded (~10 s):
 * 0, -ETIMEDOUT, or the monitor's error. */
struct ds_monitor;
int wait_event(struct ds_monitor *mon, int type, const char *name);

/* A pseudo-random pattern of n bytes from seed: the same seed, the same bytes. */
void test_fill(uint8_t *p, size_t n, unsigned int seed);

/* n WRITEs of sz bytes from registration mr: request i goes to slot
 * n - 1 - i of segment seg, skew bytes in, so the data shows any mix-up. */
struct ds_transfer_request;
void test_reversed_writes(struct ds_transfer_request *r, int n, uint32_t sz,
			  uint64_t seg, uint32_t skew, uint32_t mr);

/* A transfer handle of node with flags 0 (the shared rings, the default)
 * or DS_XFER_NO_RINGS (the ioctl path). */
struct ds_xfer;
int test_xfer_open(uint32_t node, uint32_t flags, struct ds_xfer **x);

/*
 * Every test of fixture f on both data paths: variant->xfer_flags is 0
 * (the rings) or DS_XFER_NO_RINGS, for test_xfer_open().  After
 * kselftest_harness.h.
 */
#define TEST_XFER_PATHS(f)						\
	FIXTURE_VARIANT(f) {						\
		uint32_t xfer_flags;					\
	};								\
	FIXTURE_VARIANT_ADD(f, rings) {					\
		.xfer_flags = 0,					\
	};								\
	FIXTURE_VARIANT_ADD(f, ioctl) {					\
		.xfer_flags = DS_XFER_NO_RINGS,				\
	}

/*
 * Random patterns of 1 B to 4 MiB (TEST_ROUNDTRIPS sizes), at unaligned
 * offsets in the buffers and in [seg, seg + seg_size): written through x,
 * read back and compared.  0, or the size that failed, with *err the
 * call's -errno (0: the bytes read differ).
 */
#define TEST_ROUNDTRIPS	8
size_t test_roundtrip_sizes(struct ds_xfer *x, uint64_t seg, uint64_t seg_size,
			    int *err);

/* A descriptor of /dev/dsmem attached to node, or -errno. */
int attach_open(uint32_t node);
/* Slope, by raw ioctls. */
/* The whole Slope range, at its fixed address: 0 or -errno. */
int slope_map(int fd);
/* MIG_GET of migration id with flags (WAIT: until its state is not state,
 * timeout_ms at most) into *m: 0 or -errno. */
struct dsmem_ioc_slope_mig;
int slope_mig_get(int fd, uint64_t id, uint32_t flags, uint32_t state,
		  uint32_t timeout_ms, struct dsmem_ioc_slope_mig *m);

#endif
