// SPDX-License-Identifier: BSD-2-Clause
// libdsuser control path: contexts, versions, devices, counters.
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/dsmem.h>
#include <linux/dsmem_netlink.h>

#include "ds_internal.hpp"

using namespace dsmem::detail;

#define DS_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

int dev_get(ds_ctx *ctx, const char *name, uint32_t index, ds_dev_info *dev)
{
	struct nl_msg *msg = build_request(ctx->family, DSMEM_CMD_DEV_GET, false);

	if (msg && put_dev_selector(msg, name, index)) {
		nlmsg_free(msg);
		return fail(ctx, -EINVAL, "device name too long");
	}
	return run(ctx, msg, [dev](struct nl_msg *m) { return parse_dev(m, dev); });
}

}  // namespace

DS_EXPORT const char *ds_lib_version(void)
{
	return DS_LIB_VERSION_STRING;
}

DS_EXPORT unsigned int ds_lib_abi_version(void)
{
	return DS_LIB_ABI_VERSION;
}

DS_EXPORT int ds_ctx_open(struct ds_ctx **ctxp)
{
	auto *ctx = new (std::nothrow) ds_ctx;
	if (!ctx)
		return -ENOMEM;

	int ret = ctx->nl.open(ctx->errmsg);
	if (ret)
		goto err_free_ctx;
	ctx->family = genl_ctrl_resolve(ctx->nl.sk(), DSMEM_GENL_NAME);
	if (ctx->family < 0) {
		ret = -ENOENT;
		goto err_free_ctx;
	}
	*ctxp = ctx;
	return 0;

err_free_ctx:
	delete ctx;
	return ret;
}

DS_EXPORT void ds_ctx_close(struct ds_ctx *ctx)
{
	if (!ctx)
		return;
	if (ctx->chrdev_fd >= 0)
		close(ctx->chrdev_fd);
	delete ctx;
}

DS_EXPORT const char *ds_ctx_errmsg(const struct ds_ctx *ctx)
{
	return ctx ? ctx->errmsg.c_str() : "";
}

DS_EXPORT int ds_ctx_chrdev_version(struct ds_ctx *ctx, struct ds_version *v)
{
	struct dsmem_ioc_version iv = {};

	ctx->errmsg.clear();
	if (ctx->chrdev_fd < 0) {
		ctx->chrdev_fd = open("/dev/" DSMEM_DEVICE_NAME, O_RDWR | O_CLOEXEC);
		if (ctx->chrdev_fd < 0)
			return fail(ctx, -errno, "cannot open /dev/" DSMEM_DEVICE_NAME);
	}
	if (ioctl(ctx->chrdev_fd, DSMEM_IOC_VERSION, &iv) < 0)
		return fail(ctx, -errno, "DSMEM_IOC_VERSION failed");

	memset(v, 0, sizeof(*v));
	v->abi_version = iv.abi_version;
	v->features = iv.features;
	memcpy(v->module_version, iv.module_version, sizeof(v->module_version));
	v->module_version[sizeof(v->module_version) - 1] = '\0';
	if (iv.abi_version != DSMEM_ABI_VERSION)
		return fail(ctx, -EPROTO, "the dsmem module speaks another ABI version");
	return 0;
}

DS_EXPORT int ds_version_get(struct ds_ctx *ctx, struct ds_version *v)
{
	return run(ctx, build_request(ctx->family, DSMEM_CMD_VERSION_GET, false),
		   [v](struct nl_msg *m) { return parse_version(m, v); });
}

DS_EXPORT int ds_dev_get(struct ds_ctx *ctx, const char *name,
			 struct ds_dev_info *dev)
{
	if (!name)
		return fail(ctx, -EINVAL, "no device name");
	return dev_get(ctx, name, 0, dev);
}

DS_EXPORT int ds_dev_get_by_index(struct ds_ctx *ctx, uint32_t index,
				  struct ds_dev_info *dev)
{
	return dev_get(ctx, nullptr, index, dev);
}

DS_EXPORT int ds_dev_list(struct ds_ctx *ctx, struct ds_dev_info **devs,
			  size_t *count)
{
	std::vector<ds_dev_info> out;
	int ret = run(ctx, build_request(ctx->family, DSMEM_CMD_DEV_GET, true),
		      [&out](struct nl_msg *m) {
			      ds_dev_info d;
			      int r = parse_dev(m, &d);
			      if (!r)
				      out.push_back(d);
			      return r;
		      });
	return ret ? ret : to_c_array(ctx, out, devs, count);
}

DS_EXPORT void ds_dev_list_free(struct ds_dev_info *devs)
{
	free(devs);
}

DS_EXPORT int ds_stats_get(struct ds_ctx *ctx, struct ds_stat **stats,
			   size_t *count)
{
	std::vector<ds_stat> out;
	int ret = run(ctx, build_request(ctx->family, DSMEM_CMD_STATS_GET, false),
		      [&out](struct nl_msg *m) { return parse_stats(m, out); });
	return ret ? ret : to_c_array(ctx, out, stats, count);
}

DS_EXPORT void ds_stats_free(struct ds_stat *stats)
{
	free(stats);
}

DS_EXPORT int ds_stats_reset(struct ds_ctx *ctx)
{
	return run(ctx, build_request(ctx->family, DSMEM_CMD_STATS_RESET, false),
		   [](struct nl_msg *) { return 0; });
}
