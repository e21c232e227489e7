# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# dsmem: one entry point.  The kernel module is built by Kbuild against
# the installed headers, userspace by CMake; tests and the demo run the
# module inside QEMU guests (scripts/guest).
#
#   make deps     install the Debian packages (scripts/setup.sh)
#   make          build dsmem.ko, libdsuser, dsctl and the tests
#   make check    lint the kernel code, run the unit tests and the guest
#                 tests, on Debian's kernel and on the debug kernel
#   make demo     boot a guest and show what dsmem sees
#   make bench    benchmarks (B=subset)
#   make chaos    the object store under faults, checked (B=chaos)
#   make lint     generated netlink code current; W=1 + sparse +
#                 checkpatch --strict on kernel code
#   make debug-kernel  build (once, cached) the KASAN/lockdep/kmemleak kernel
#   make kernel-debug  dsmem.ko built against it (build/debug/kernel)

KVER ?= $(shell ls -d /lib/modules/*/build 2>/dev/null | sed 's|/lib/modules/||;s|/build||' | sort -V | tail -n 1)
KDIR ?= /lib/modules/$(KVER)/build
BUILD := $(CURDIR)/build
USER_BUILD := $(BUILD)/user
KSRC := $(BUILD)/ksrc
CHECKPATCH := $(KSRC)/scripts/checkpatch.pl
KERNEL_SOURCES := $(filter-out %.mod.c,$(wildcard kernel/*.c kernel/*.h kernel/*/*.c kernel/*/*.h \
		  tests/kmod/*.c)) $(wildcard include/uapi/linux/*.h)

# Warnings are errors: the module must build clean at W=1.
KBUILD_FLAGS := -C $(KDIR) M=$(CURDIR)/kernel W=1 KCFLAGS=-Werror

# The debug tier's copy of the module, and the module that plants the
# reports the tier must catch (tests/kmod): Kbuild writes objects next to
# the sources, so they build in a tree of links to kernel/, include/ and
# tests/kmod/.
DEBUG_MOD := $(BUILD)/debug

all: kernel user

deps:
	scripts/setup.sh

ksrc:
	scripts/ksrc.sh

kernel:
	@test -d "$(KDIR)" || { echo "no kernel headers at '$(KDIR)': run 'make deps'" >&2; exit 1; }
	$(MAKE) $(KBUILD_FLAGS) modules

debug-kernel:
	scripts/debug-kernel >/dev/null

kernel-debug: debug-kernel
	@mkdir -p $(DEBUG_MOD)
	find $(DEBUG_MOD) -xtype l -delete
	cd $(CURDIR) && find kernel include tests/kmod \( -name '*.[ch]' -o -name Kbuild \) \
		! -name '*.mod.c' -exec sh -c 'mkdir -p "$$0/$${1%/*}" && ln -sf "$$PWD/$$1" "$$0/$$1"' $(DEBUG_MOD) {} \;
	$(MAKE) -C $$(scripts/debug-kernel) M=$(DEBUG_MOD)/kernel W=1 KCFLAGS=-Werror modules
	$(MAKE) -C $$(scripts/debug-kernel) M=$(DEBUG_MOD)/tests/kmod W=1 KCFLAGS=-Werror modules

user: ksrc
	cmake -S . -B $(USER_BUILD) -DKSRC_DIR=$(KSRC) >/dev/null
	@# its own make, not a sub-make of this one (no directory chatter)
	env -u MAKEFLAGS -u MAKELEVEL cmake --build $(USER_BUILD) -j$(shell nproc)

# the generated netlink code is current, then sparse over every file (C=2
# checks even up-to-date objects), the module's layers
# (scripts/check-layers), checkpatch.
lint: ksrc
	scripts/nlgen.py --check
	@mkdir -p $(BUILD)
	scripts/lint-kbuild $(BUILD)/sparse.log $(MAKE) $(KBUILD_FLAGS) C=2 CF="-D__CHECK_ENDIAN__" modules
	scripts/check-layers
	$(CHECKPATCH) --strict --no-tree --quiet --ignore FILE_PATH_CHANGES -f $(KERNEL_SOURCES)
	@echo "lint: W=1, sparse, layers and checkpatch --strict are clean"

# Each phase's seconds go into tests/run's table (build/check-times);
# the debug kernel and its module are built by tests/run, beside the
# tests that do not need them.  DSMEM_CHECK_START is when the run's
# 83-minute deadline for its guests begins.
check: export DSMEM_CHECK_START := $(shell date +%s)
check: export DSMEM_CHECK_TIMES := $(BUILD)/check-times
check:
	@mkdir -p $(BUILD) && rm -f $(DSMEM_CHECK_TIMES)
	scripts/timed $(DSMEM_CHECK_TIMES) set-up scripts/setup.sh
	scripts/timed $(DSMEM_CHECK_TIMES) build $(MAKE) all
	scripts/timed $(DSMEM_CHECK_TIMES) lint $(MAKE) lint
	DSMEM_BUILD_DEBUG=1 tests/run

demo: deps
	$(MAKE) all
	scripts/demo.sh

bench: deps
	$(MAKE) all
	scripts/bench.sh $(B)

# The object store under faults, checked (make bench B=chaos; CHAOS_SECONDS)
chaos:
	$(MAKE) bench B=chaos

install: all
	$(MAKE) -C $(KDIR) M=$(CURDIR)/kernel modules_install
	cmake --install $(USER_BUILD)

clean:
	-$(MAKE) -C $(KDIR) M=$(CURDIR)/kernel clean
	rm -rf $(BUILD)

.PHONY: all deps ksrc kernel debug-kernel kernel-debug user lint check demo bench chaos install clean
