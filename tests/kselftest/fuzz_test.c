// SPDX-License-Identifier: BSD-2-Clause
/*
 * Random bad input against /dev/dsmem and the "dsmem" family: every
 * request gets one of the documented errors, the module keeps answering,
 * and the kernel is not tainted (scripts/guest also checks the taint).
 * Deterministic: the seed is fixed and printed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/dsmem.h>
#include <linux/dsmem_netlink.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>

#include <dsmem/ds.h>

#include "kselftest_harness.h"
#include "util.h"

#define SEED		0x5eed
#define NL_ROUNDS	3000
#define IOCTL_ROUNDS	20000

static unsigned int rnd(unsigned int n)
{
	return (unsigned int)random() % n;
}

static void fill_random(void *buf, size_t len)
{
	unsigned char *p = buf;

	for (size_t i = 0; i < len; i++)
		p[i] = (unsigned char)random();
}

FIXTURE(fuzz) {
	struct raw_nl raw;
	unsigned long taint;
};

FIXTURE_SETUP(fuzz)
{
	srandom(SEED);
	TH_LOG("seed 0x%x", SEED);
	self->taint = kernel_taint();
	ASSERT_EQ(0, raw_open(&self->raw));
}

FIXTURE_TEARDOWN(fuzz)
{
	close(self->raw.fd);
}

/* Build one random request: known and unknown commands, attributes of
 * random types and lengths, sometimes nested, sometimes a lying length. */
static size_t random_request(int family, char *buf, size_t size)
{
	struct nlmsghdr *nh = (void *)buf;
	struct genlmsghdr *g = NLMSG_DATA(nh);
	size_t len = NLMSG_LENGTH(GENL_HDRLEN);
	int nattrs = rnd(6);

	memset(buf, 0, size);
	nh->nlmsg_type = family;
	nh->nlmsg_flags = NLM_F_REQUEST | (rnd(3) ? NLM_F_ACK : NLM_F_DUMP);
	nh->nlmsg_seq = random();
	g->cmd = rnd(DSMEM_CMD_MAX + 3);
	g->version = rnd(4) ? DSMEM_GENL_VERSION : rnd(256);
	g->reserved = rnd(20) ? 0 : random();

	for (int i = 0; i < nattrs && len + 128 < size; i++) {
		struct nlattr *a = (void *)(buf + NLMSG_ALIGN(len));
		int plen = rnd(8) ? rnd(20) : rnd(100);

		a->nla_type = rnd(DSMEM_ATTR_MAX + 4) | (rnd(10) ? 0 : NLA_F_NESTED);
		a->nla_len = NLA_HDRLEN + plen;
		fill_random((char *)a + NLA_HDRLEN, plen);
		if (rnd(4) == 0 && plen >= 8) {	/* a name-like string */
			memcpy((char *)a + NLA_HDRLEN, "rxe0", 5);
		}
		len = NLMSG_ALIGN(len) + NLA_ALIGN(a->nla_len);
		if (!rnd(25))	/* claims more than the message holds */
			a->nla_len += 16 + rnd(200);
	}
	nh->nlmsg_len = len;
	return len;
}

TEST_F_TIMEOUT(fuzz, netlink_random_requests, 600)
{
	static char buf[4096];
	int counts[5] = {};	/* ok, EINVAL, EOPNOTSUPP, no such object, other */

	for (int i = 0; i < NL_ROUNDS; i++) {
		size_t len = random_request(self->raw.family, buf, sizeof(buf));
		int error;

		ASSERT_EQ((ssize_t)len, send(self->raw.fd, buf, len, 0));
		error = raw_answer(self->raw.fd, NULL, 0);
		switch (error) {
		case 0: counts[0]++; break;
		case -EINVAL: case -ERANGE: case -EMSGSIZE: counts[1]++; break;
		case -EOPNOTSUPP: counts[2]++; break;
		/* no such device, token or capture; a stale token handle */
		case -ENODEV: case -ENOENT: case -ESTALE: counts[3]++; break;
		default:
			counts[4]++;
			TH_LOG("round %d: unexpected error %d", i, error);
		}
	}
	TH_LOG("ok %d, invalid %d, unsupported %d, no object %d, other %d",
	       counts[0], counts[1], counts[2], counts[3], counts[4]);
	EXPECT_EQ(0, counts[4]);
	/* the generator reached the handlers, not only the validator */
	EXPECT_GT(counts[0], 0);
	EXPECT_GT(counts[1], 0);

	/* still answering, still untainted */
	struct ds_version v;
	struct ds_ctx *ctx;
	ASSERT_EQ(0, ds_ctx_open(&ctx));
	EXPECT_EQ(0, ds_version_get(ctx, &v));
	ds_ctx_close(ctx);
	EXPECT_EQ(self->taint, kernel_taint());
}

TEST_F_TIMEOUT(fuzz, ioctl_random_commands, 600)
{
	static unsigned char arg[16384 + 64];
	int dev = open("/dev/dsmem", O_RDWR | O_CLOEXEC);
	int ok = 0, rejected = 0, other = 0;

	ASSERT_GE(dev, 0);
	for (int i = 0; i < IOCTL_ROUNDS; i++) {
		unsigned int dir = rnd(4);
		unsigned int type = rnd(8) ? DSMEM_IOCTL_MAGIC : rnd(256);
		unsigned int nr = rnd(8) ? rnd(4) : rnd(256);
		unsigned int size = rnd(8) ? rnd(128) : rnd(16384);
		void *p = arg;

		if (rnd(3))
			memset(arg, 0, size);
		else
			fill_random(arg, size);
		if (!rnd(30))
			p = (void *)(uintptr_t)(rnd(2) ? 8 : 0xffffffffffff0000ULL);
		else if (!rnd(30))
			p = arg + sizeof(arg) - rnd(64);	/* runs off the buffer */

		int ret = ioctl(dev, _IOC(dir, type, nr, size), p);
		if (!ret)
			ok++;
		else if (errno == ENOTTY || errno == EINVAL || errno == E2BIG || errno == EFAULT ||
			 /* the data path's refusals: no such node, task or buffer;
			  * not attached; attached already
			  */
			 errno == ENOENT || errno == ENOTCONN || errno == EBUSY)
			rejected++;
		else {
			other++;
			TH_LOG("round %d: cmd 0x%x: %s", i, _IOC(dir, type, nr, size), strerror(errno));
		}
	}
	TH_LOG("ok %d, rejected %d, other %d", ok, rejected, other);
	EXPECT_EQ(0, other);
	EXPECT_GT(ok, 0);

	struct dsmem_ioc_version v = {};
	EXPECT_EQ(0, ioctl(dev, DSMEM_IOC_VERSION, &v));
	EXPECT_EQ(DSMEM_ABI_VERSION, v.abi_version);
	close(dev);
	EXPECT_EQ(self->taint, kernel_taint());
}

TEST_HARNESS_MAIN
