/* SPDX-License-Identifier: BSD-2-Clause */
/* A program that uses libdsuser the way an application would. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <dsmem/ds.h>

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
