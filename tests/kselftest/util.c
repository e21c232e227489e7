// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <grp.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>

#include <linux/dsmem.h>
#include <linux/dsmem_netlink.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>

#include <dsmem/ds.h>

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

int cg_write(const char *path, const char *fmt, ...)
{
	char buf[64];
	va_list ap;
	int fd, n, ret = 0;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, buf, n) != n)
		ret = -errno;
	close(fd);
	return ret;
}

uint64_t cg_read(const char *cg, const char *file, const char *key)
{
	char path[PATH_MAX], buf[1024], *p = buf;
	size_t klen = strlen(key);

	snprintf(path, sizeof(path), "%s/%s", cg, file);
	if (read_file(path, buf, sizeof(buf)))
		return ~0ULL;
	while (klen && p && (strncmp(p, key, klen) || p[klen] != ' ')) {
		p = strchr(p, '\n');
		p = p ? p + 1 : NULL;
	}
	return p ? strtoull(p + klen, NULL, 10) : ~0ULL;
}

int cg_make(const char *cg, uint64_t limit)
{
	char ctl[4096], path[PATH_MAX];
	int ret;

	if (read_file("/proc/filesystems", ctl, sizeof(ctl)))
		return -errno;
	if (!strstr(ctl, "\tcgroup2\n"))
		return -ENODEV;
	if (read_file(CG_ROOT "/cgroup.controllers", ctl, sizeof(ctl))) {
		if (mount("none", CG_ROOT, "cgroup2", 0, NULL))
			return -errno;
		ret = read_file(CG_ROOT "/cgroup.controllers", ctl, sizeof(ctl));
		if (ret)
			return ret;
	}
	if (!strstr(ctl, "memory"))
		return -ENODEV;
	ret = cg_write(CG_ROOT "/cgroup.subtree_control", "+memory");
	if (ret)
		return ret;
	rmdir(cg);
	if (mkdir(cg, 0755))
		return -errno;
	snprintf(path, sizeof(path), "%s/memory.max", cg);
	return cg_write(path, "%llu", (unsigned long long)limit);
}

int param_get(const char *name, uint64_t *v)
{
	char path[128], buf[32];
	int ret;

	snprintf(path, sizeof(path), "/sys/module/dsmem/parameters/%s", name);
	ret = read_file(path, buf, sizeof(buf));
	if (ret)
		return ret;
	/* a bool reads as Y or N */
	*v = buf[0] == 'Y' ? 1 : buf[0] == 'N' ? 0 : strtoull(buf, NULL, 10);
	return 0;
}

int param_set(const char *name, uint64_t v)
{
	char path[128], buf[32];
	int fd, n, ret = 0;

	snprintf(path, sizeof(path), "/sys/module/dsmem/parameters/%s", name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* signed: what param_get read of an int's -1 goes back as -1 */
	n = snprintf(buf, sizeof(buf), "%lld", (long long)v);
	if (write(fd, buf, n) != n)
		ret = -errno;
	close(fd);
	return ret;
}

pid_t fork_nobody(void)
{
	pid_t pid = fork();

	/* root's supplementary groups would make nobody a member of them */
	if (pid == 0 &&
	    (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
	     setresuid(65534, 65534, 65534)))
		_exit(10);
	return pid;
}

int child_step(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

bool debug_kernel(void)
{
	const char *kernel = getenv("DSMEM_KERNEL");

	return kernel && !strcmp(kernel, "debug");
}

const char *heavy_skip(const struct heavy_test *list, size_t n, const char *test)
{
	if (!debug_kernel())
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(list[i].test, test))
			return list[i].why;
	return NULL;
}

uint64_t stat_value(struct ds_ctx *ctx, const char *name)
{
	struct ds_ctx *own = NULL;
	struct ds_stat *st;
	uint64_t v = ~0ULL;
	size_t n;

	if (!ctx && ds_ctx_open(&own))
		return v;
	if (!ds_stats_get(ctx ? ctx : own, &st, &n)) {
		for (size_t i = 0; i < n; i++)
			if (!strcmp(st[i].name, name))
				v = st[i].value;
		ds_stats_free(st);
	}
	if (own)
		ds_ctx_close(own);
	return v;
}

int tracefs_mount(void)
{
	if (access(TRACEFS "/trace", F_OK))
		run("mount -t tracefs nodev " TRACEFS);
	return access(TRACEFS "/trace", F_OK) ? -errno : 0;
}

int tracefs_write(const char *file, const char *val)
{
	char path[256];
	int fd, ret = 0;

	snprintf(path, sizeof(path), TRACEFS "/%s", file);
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

int tracefs_event_enable(const char *event)
{
	char path[160], cur[4] = "";
	FILE *f;

	snprintf(path, sizeof(path), TRACEFS "/events/%s/enable", event);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	if (!fgets(cur, sizeof(cur), f))
		cur[0] = 0;
	fclose(f);
	if (cur[0] == '1')
		return 0;
	snprintf(path, sizeof(path), "events/%s/enable", event);
	return tracefs_write(path, "1");
}

/* the function's address, and the next symbol's as its end */
int kallsyms_func_range(const char *module, const char *func, unsigned long *start,
			unsigned long *end)
{
	char line[512], name[256], mod[80], want[84];
	FILE *f = fopen("/proc/kallsyms", "re");
	unsigned long a;
	int ret = -ENOENT;

	if (!f)
		return -errno;
	snprintf(want, sizeof(want), "[%s]", module);
	*start = 0;
	*end = ~0UL;
	while (fgets(line, sizeof(line), f)) {
		int n = sscanf(line, "%lx %*s %255s %79s", &a, name, mod);

		if (n == 3 && !strcmp(mod, want) && !strcmp(name, func)) {
			*start = a;
			ret = a ? 0 : -EPERM;	/* addresses hidden */
		}
	}
	rewind(f);
	while (!ret && fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx", &a) == 1 && a > *start && a < *end)
			*end = a;
	fclose(f);
	return ret;
}

int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

unsigned long kernel_taint(void)
{
	char buf[32];

	if (read_file("/proc/sys/kernel/tainted", buf, sizeof(buf)))
		return ~0UL;
	return strtoul(buf, NULL, 10);
}

int raw_open(struct raw_nl *r)
{
	struct nl_sock *sk = nl_socket_alloc();
	int one = 1;

	if (!sk || genl_connect(sk))
		return -1;
	r->family = genl_ctrl_resolve(sk, DSMEM_GENL_NAME);
	nl_socket_free(sk);
	r->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	if (r->fd < 0 || r->family < 0)
		return -1;
	setsockopt(r->fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	setsockopt(r->fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	return 0;
}

int raw_answer(int fd, char *text, size_t tlen)
{
	static char buf[65536];

	if (text)
		text[0] = '\0';
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);

		if (n < 0)
			return -errno;
		for (struct nlmsghdr *nh = (void *)buf; NLMSG_OK(nh, n); nh = NLMSG_NEXT(nh, n)) {
			/* a dump's error comes in NLMSG_DONE: an int, then TLVs */
			bool done = nh->nlmsg_type == NLMSG_DONE;
			struct nlmsgerr *e = NLMSG_DATA(nh);
			int error = done ? *(int *)NLMSG_DATA(nh) : e->error;
			size_t head = done ? sizeof(int) : sizeof(*e);
			struct nlattr *a;
			int rem;

			if (!done && nh->nlmsg_type != NLMSG_ERROR)
				continue;
			if (text && (nh->nlmsg_flags & NLM_F_ACK_TLVS)) {
				char *tlv = (char *)NLMSG_DATA(nh) + head;

				rem = (char *)nh + nh->nlmsg_len - tlv;
				nla_for_each_attr(a, (struct nlattr *)tlv, rem, rem)
					if (nla_type(a) == NLMSGERR_ATTR_MSG)
						snprintf(text, tlen, "%s", (char *)nla_data(a));
			}
			return error;
		}
	}
}

int raw_send(struct raw_nl *r, struct nl_msg *m, char *text, size_t tlen)
{
	struct nlmsghdr *h = nlmsg_hdr(m);
	ssize_t n = send(r->fd, h, h->nlmsg_len, 0);

	nlmsg_free(m);
	if (n < 0)
		return -errno;
	return raw_answer(r->fd, text, tlen);
}

int wait_event(struct ds_monitor *mon, int type, const char *name)
{
	struct ds_event ev;

	/* bounded: a lost event fails the test instead of hanging it */
	for (int i = 0; i < 50; i++) {
		int ret = ds_monitor_next(mon, &ev, 200);

		if (ret == -EAGAIN)
			continue;
		if (ret)
			return ret;
		if ((int)ev.type == type && !strcmp(ev.dev.name, name))
			return 0;
	}
	return -ETIMEDOUT;
}

uint64_t rxe_counter(const char *dev, const char *name)
{
	char path[160], buf[32];

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/hw_counters/%s",
		 dev, name);
	return read_file(path, buf, sizeof(buf)) < 0 ? 0 : strtoull(buf, NULL, 10);
}

uint64_t rxe_sent_pkts(const char *dev)
{
	return rxe_counter(dev, "sent_pkts");
}

static bool rsegs_are(const struct ds_peer_info *p, uint32_t n)
{
	return p->rseg_total == n;
}

static bool paths_are(const struct ds_peer_info *p, uint32_t n)
{
	return p->paths == n;
}

/* Until peer of node is up and is(its info, n), for about 20 s. */
static int wait_peer(struct ds_ctx *ctx, uint32_t node, uint32_t peer,
		     bool (*is)(const struct ds_peer_info *p, uint32_t n), uint32_t n)
{
	struct ds_peer_info p;

	for (int i = 0; i < 400; i++) {
		if (!ds_peer_get(ctx, node, peer, &p) && p.state == DS_PEER_UP && is(&p, n))
			return 0;
		usleep(50000);
	}
	return -ETIMEDOUT;
}

int wait_rsegs(struct ds_ctx *ctx, uint32_t node, uint32_t peer, uint32_t n)
{
	return wait_peer(ctx, node, peer, rsegs_are, n);
}

int wait_paths(struct ds_ctx *ctx, uint32_t node, uint32_t peer, unsigned int paths)
{
	return wait_peer(ctx, node, peer, paths_are, paths);
}

int attach_open(uint32_t node)
{
	struct dsmem_ioc_attach at = { .node_id = node };
	int fd = open("/dev/dsmem", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (ioctl(fd, DSMEM_IOC_ATTACH, &at)) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
}

int slope_map(int fd)
{
	void *p = mmap((void *)DSMEM_SLOPE_BASE, DSMEM_SLOPE_SIZE,
		       PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE,
		       fd, 0);

	return p == MAP_FAILED ? -errno : 0;
}

int slope_mig_get(int fd, uint64_t id, uint32_t flags, uint32_t state,
		  uint32_t timeout_ms, struct dsmem_ioc_slope_mig *m)
{
	memset(m, 0, sizeof(*m));
	m->id = id;
	m->flags = flags;
	m->state = state;
	m->timeout_ms = timeout_ms;
	return ioctl(fd, DSMEM_IOC_SLOPE_MIG_GET, m) ? -errno : 0;
}

int test_key_add(struct ds_ctx *ctx)
{
	/* not a secret: tests only, and the same in every guest */
	static const char key[] = "dsmem test cluster key, 32 bytes";

	return ds_key_add(ctx, TEST_KEY_NAME, key, sizeof(key) - 1, 1);
}

int test_node_add(struct ds_ctx *ctx, uint32_t id, const char *dev, uint16_t port)
{
	int ret = test_key_add(ctx);

	return ret ? ret : ds_node_add(ctx, id, dev, port);
}

int test_peer_add(struct ds_ctx *ctx, uint32_t node, const char *addr, uint16_t port,
		  uint32_t remote, uint32_t *peer)
{
	struct ds_peer_info *peers;
	bool admitted = false;
	size_t n;
	int ret = ds_peer_list(ctx, remote, &peers, &n);

	if (ret)
		return ret;
	for (size_t i = 0; i < n; i++)
		admitted |= peers[i].listen && peers[i].remote_node == node &&
			    !strcmp(peers[i].addr, addr);
	free(peers);
	if (!admitted) {
		ret = ds_peer_add_id(ctx, remote, addr, 0, node, DS_PEER_LISTEN, NULL);
		if (ret)
			return ret;
	}
	return ds_peer_add_id(ctx, node, addr, port, remote, 0, peer);
}

int test_ring_map(struct test_ring *r, int fd)
{
	r->fd = fd;
	r->sq_mem = mmap(NULL, r->s.sq_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
			 fd, r->s.sq_off);
	r->cq_mem = mmap(NULL, r->s.cq_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
			 fd, r->s.cq_off);
	if (r->sq_mem == MAP_FAILED || r->cq_mem == MAP_FAILED)
		return -errno;
	r->sq = (void *)r->sq_mem;
	r->cq = (void *)r->cq_mem;
	r->sqes = (void *)(r->sq_mem + DSMEM_RING_ENTRIES_OFFSET);
	r->cqes = (void *)(r->cq_mem + DSMEM_RING_ENTRIES_OFFSET);
	return 0;
}

void test_ring_unmap(struct test_ring *r)
{
	munmap(r->sq_mem, r->s.sq_bytes);
	munmap(r->cq_mem, r->s.cq_bytes);
}

void test_fill(uint8_t *p, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = seed >> 16;
	}
}

void test_reversed_writes(struct ds_transfer_request *r, int n, uint32_t sz,
			  uint64_t seg, uint32_t skew, uint32_t mr)
{
	for (int i = 0; i < n; i++)
		r[i] = (struct ds_transfer_request){
			.source_offset = (uint64_t)i * sz, .target_id = seg,
			.target_offset = (uint64_t)(n - 1 - i) * sz + skew,
			.length = sz, .opcode = DS_OP_WRITE, .mr = mr };
}

int test_xfer_open(uint32_t node, uint32_t flags, struct ds_xfer **x)
{
	struct ds_xfer_attr a = DS_XFER_ATTR_INIT;

	a.flags = flags;
	return ds_xfer_open_attr(node, &a, x);
}

size_t test_roundtrip_sizes(struct ds_xfer *x, uint64_t seg, uint64_t seg_size,
			    int *err)
{
	static const size_t sizes[TEST_ROUNDTRIPS] = { 1, 7, 64, 4095, 4097, 65539,
						       (1 << 20) + 5, 4 << 20 };
	uint8_t *out = malloc((4 << 20) + 64), *in = malloc((4 << 20) + 64);
	size_t failed = 0;

	*err = -ENOMEM;
	for (size_t i = 0; out && in && i < TEST_ROUNDTRIPS && !failed; i++) {
		size_t n = sizes[i], off = (i * 4099) % 4096 + 1;
		uint64_t ra = seg + (i * 1234567) % (seg_size - n);

		test_fill(out + off, n, i + 1);
		memset(in + 3, 0, n);
		*err = ds_write(x, ra, out + off, n);
		if (!*err)
			*err = ds_read(x, ra, in + 3, n);
		if (*err || memcmp(out + off, in + 3, n))
			failed = n;
	}
	if (!out || !in)
		failed = 1;
	free(out);
	free(in);
	return failed;
}
