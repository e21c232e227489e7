// SPDX-License-Identifier: BSD-2-Clause
/*
 * /dev/dsmem: the version ioctl and the dispatcher's size-versioning rules.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/dsmem.h>
#include <dsmem/ds.h>

#include "kselftest_harness.h"
#include "util.h"

#define VERSION_NR	_IOC_NR(DSMEM_IOC_VERSION)
#define RW		(_IOC_READ | _IOC_WRITE)

FIXTURE(chrdev) {
	int fd;
};

FIXTURE_SETUP(chrdev)
{
	self->fd = open("/dev/dsmem", O_RDWR | O_CLOEXEC);
	ASSERT_GE(self->fd, 0) TH_LOG("open /dev/dsmem: %s", strerror(errno));
}

FIXTURE_TEARDOWN(chrdev)
{
	close(self->fd);
}

TEST_F(chrdev, version)
{
	struct dsmem_ioc_version v = {};

	ASSERT_EQ(0, ioctl(self->fd, DSMEM_IOC_VERSION, &v));
	EXPECT_EQ(DSMEM_ABI_VERSION, v.abi_version);
	EXPECT_EQ(DSMEM_FEAT_DEV_EVENTS | DSMEM_FEAT_STATS,
		  v.features & (DSMEM_FEAT_DEV_EVENTS | DSMEM_FEAT_STATS));
	/* the highest command dispatched is the rings' enter */
	EXPECT_EQ(_IOC_NR(DSMEM_IOC_RING_ENTER), v.max_ioctl_nr);
	EXPECT_STREQ("0.1.0", v.module_version);
}

TEST_F(chrdev, unknown_command_is_enotty)
{
	struct dsmem_ioc_version v = {};
	uint64_t before = stat_value(NULL, "ioctl_unknown");

	/* a number past the table */
	EXPECT_EQ(-1, ioctl(self->fd, _IOWR(DSMEM_IOCTL_MAGIC, 0x7f, v), &v));
	EXPECT_EQ(ENOTTY, errno);
	/* another magic */
	EXPECT_EQ(-1, ioctl(self->fd, _IOWR('T', VERSION_NR, v), &v));
	EXPECT_EQ(ENOTTY, errno);
	/* the right number with the wrong direction */
	EXPECT_EQ(-1, ioctl(self->fd, _IOR(DSMEM_IOCTL_MAGIC, VERSION_NR, v), &v));
	EXPECT_EQ(ENOTTY, errno);
	EXPECT_EQ(-1, ioctl(self->fd, _IO(DSMEM_IOCTL_MAGIC, VERSION_NR)));
	EXPECT_EQ(ENOTTY, errno);
	EXPECT_EQ(before + 4, stat_value(NULL, "ioctl_unknown"));
}

TEST_F(chrdev, short_struct_is_einval)
{
	char buf[DSMEM_IOC_VERSION_SIZE_VER0] = {};
	uint64_t before = stat_value(NULL, "ioctl_short");

	EXPECT_EQ(-1, ioctl(self->fd, _IOC(RW, DSMEM_IOCTL_MAGIC, VERSION_NR,
					   DSMEM_IOC_VERSION_SIZE_VER0 - 8), buf));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, ioctl(self->fd, _IOC(RW, DSMEM_IOCTL_MAGIC, VERSION_NR, 0), buf));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(before + 2, stat_value(NULL, "ioctl_short"));
}

TEST_F(chrdev, larger_struct_zero_tail_is_accepted)
{
	struct {
		struct dsmem_ioc_version v;
		uint64_t future[4];
	} big;

	memset(&big, 0, sizeof(big));
	ASSERT_EQ(0, ioctl(self->fd, _IOC(RW, DSMEM_IOCTL_MAGIC, VERSION_NR,
					  sizeof(big)), &big));
	EXPECT_EQ(DSMEM_ABI_VERSION, big.v.abi_version);
	/* the kernel writes back only what it knows */
	for (int i = 0; i < 4; i++)
		EXPECT_EQ(0, big.future[i]);
}

TEST_F(chrdev, larger_struct_nonzero_tail_is_e2big)
{
	struct {
		struct dsmem_ioc_version v;
		uint64_t future[4];
	} big;
	uint64_t before = stat_value(NULL, "ioctl_nonzero_tail");

	memset(&big, 0, sizeof(big));
	big.future[3] = 1;
	EXPECT_EQ(-1, ioctl(self->fd, _IOC(RW, DSMEM_IOCTL_MAGIC, VERSION_NR,
					   sizeof(big)), &big));
	EXPECT_EQ(E2BIG, errno);
	EXPECT_EQ(0, big.v.abi_version);	/* nothing was written back */
	EXPECT_EQ(before + 1, stat_value(NULL, "ioctl_nonzero_tail"));
}

TEST_F(chrdev, unknown_flags_are_einval)
{
	struct dsmem_ioc_version v = { .flags = 1 };

	EXPECT_EQ(-1, ioctl(self->fd, DSMEM_IOC_VERSION, &v));
	EXPECT_EQ(EINVAL, errno);
	v.flags = 0;
	v.__pad = 1;
	EXPECT_EQ(-1, ioctl(self->fd, DSMEM_IOC_VERSION, &v));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(chrdev, bad_pointer_is_efault)
{
	EXPECT_EQ(-1, ioctl(self->fd, DSMEM_IOC_VERSION, (void *)16));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, ioctl(self->fd, DSMEM_IOC_VERSION, NULL));
	EXPECT_EQ(EFAULT, errno);
}

TEST_F(chrdev, library_checks_abi)
{
	struct ds_version v;
	struct ds_ctx *ctx;

	ASSERT_EQ(0, ds_ctx_open(&ctx));
	EXPECT_EQ(0, ds_ctx_chrdev_version(ctx, &v));
	EXPECT_EQ(DSMEM_ABI_VERSION, v.abi_version);
	ds_ctx_close(ctx);
}

TEST_HARNESS_MAIN
