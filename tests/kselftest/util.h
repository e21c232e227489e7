/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Helpers for dsmem's kernel selftests.  They run as root inside a test
 * guest started by scripts/guest, which exports DSMEM_KO, DSMEM_NETDEV,
 * DSMEM_SPARE_NETDEV, DSMEM_PEER_ADDR, DSMEM_GUEST_ID and DSMEM_RUN_DIR.
 */
#ifndef DSMEM_TEST_UTIL_H
#define DSMEM_TEST_UTIL_H

#include <stdbool.h>
#include <stddef.h>

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

#endif
