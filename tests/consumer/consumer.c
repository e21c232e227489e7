/* SPDX-License-Identifier: BSD-2-Clause */
/* A program that uses libdsuser the way an application would. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <dsmem/ds.h>
#ifdef DS_CONSUMER_STORE	/* linked with libdsstore too (install_check.sh) */
#include <dsmem/store.h>

/* DSSTORE_1.1: soft pins, TTLs and batches, refused clearly without a handle */
static int store_calls(void)
{
	struct ds_store_put_opts opts = {
		.size = sizeof(opts), .flags = DS_STORE_PUT_SOFT_PIN, .ttl_ms = 60000,
	};
	char b[8] = "";
	struct iovec iov = { b, sizeof(b) };
	uint64_t task;

	if (ds_store_put_ex(NULL, "k", &iov, 1, NULL, &opts, &task) != -EINVAL ||
	    ds_store_set_attr(NULL, "k", DS_STORE_ATTR_SOFT_PIN | DS_STORE_ATTR_TTL,
			      &opts) != -EINVAL ||
	    strcmp(ds_store_errmsg(NULL), "no store handle"))
		return 5;
	/* and batches */
	struct ds_store_batch_item item = { .key = "k", .iov = &iov, .iovcnt = 1 };

	if (ds_store_batch_put(NULL, &item, 1, NULL, NULL, &task) != -EINVAL ||
	    ds_store_batch_get(NULL, &item, 1, &task) != -EINVAL ||
	    ds_store_batch_exist(NULL, &item, 1) != -EINVAL ||
	    ds_store_batch_del(NULL, &item, 1) != -EINVAL)
		return 6;
	/* DSSTORE_1.2: drains with a deadline, the pool's events */
	char err[64] = "";
	uint64_t moved = 1;

	if (ds_store_close_drain(NULL, 1000, &moved, err, sizeof(err)) != -EINVAL || moved ||
	    ds_store_segment_drain("127.0.0.1:1", 0, 1000, NULL, err, sizeof(err)) != -EINVAL ||
	    ds_store_watch("127.0.0.1:1", 1000, NULL, NULL, err, sizeof(err)) != -EINVAL)
		return 7;
	/* DSSTORE_1.3: the client's view of its membership */
	struct ds_store_health h;

	if (ds_store_health_get(NULL, &h, sizeof(h)) != -EINVAL)
		return 8;
	return 0;
}
#endif

int main(void)
{
	struct ds_ctx *ctx;
	int ret;

	if (ds_lib_abi_version() != DS_LIB_ABI_VERSION || !strlen(ds_lib_version()))
		return 2;
	/* DSUSER_1.2: the token cache's tables, no module needed */
	if (ds_cache_param_count() != DS_CACHE_P_NR ||
	    ds_cache_param_lookup("window") != DS_CACHE_P_WINDOW_NS ||
	    strcmp(ds_token_type_name(DS_TOKEN_QP), "qp"))
		return 4;
#ifdef DS_CONSUMER_STORE
	ret = store_calls();
	if (ret)
		return ret;
#endif
	ret = ds_ctx_open(&ctx);
	if (ret == -ENOENT) {	/* no module on this host: a clean answer */
		printf("libdsuser %s: module not loaded\n", ds_lib_version());
		return 0;
	}
	if (ret)
		return 3;
	ds_ctx_close(ctx);
	printf("libdsuser %s: module loaded\n", ds_lib_version());
	return 0;
}
